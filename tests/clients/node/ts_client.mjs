// The TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0) against the basket server,
// pinned to 2026-07-28 (modern, stateless): lists the tools, creates a basket, adds items with
// and without a request_id, views the basket, and requires that the client printed no warning
// (it prints `unknown format "uint32" ignored ...` for a schemars format in an output schema).
//
//   node ts_client.mjs URL
//
// Run by scripts/node-clients.sh from the folder the client is installed in. Prints one line per
// check, `PASS <name>` or `FAIL <name>: <why>`; exits non-zero if any failed.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv[2];
if (!url) {
  process.stdout.write('usage: node ts_client.mjs URL\n');
  process.exit(2);
}

// Everything the client writes to stderr or through console.warn/console.error is a warning.
// Our own lines go to stdout.
const warnings = [];
for (const level of ['warn', 'error']) {
  console[level] = (...args) => warnings.push(`console.${level}: ${args.map(String).join(' ')}`);
}
const stderrWrite = process.stderr.write.bind(process.stderr);
process.stderr.write = (chunk, ...rest) => {
  warnings.push(`stderr: ${String(chunk).trimEnd()}`);
  return stderrWrite(chunk, ...rest);
};

let failed = 0;
const say = (line) => process.stdout.write(`${line}\n`);
async function check(name, body) {
  try {
    const detail = await body();
    say(`PASS ${name}${detail ? ` (${detail})` : ''}`);
  } catch (e) {
    failed++;
    const kind = e?.constructor && e.constructor !== Error ? `${e.constructor.name} ${e.code ?? ''} ` : '';
    say(`FAIL ${name}: ${kind}${e?.message ?? e}`);
  }
}
function expect(cond, message) {
  if (!cond) throw new Error(message);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
// A basket's lines as `sku x quantity`, whatever order the keys came in.
const lines = (basket) => (basket.items ?? []).map((l) => `${l.sku} x ${l.quantity}`);

const client = new Client(
  { name: 'mcp-lambda-node-clients', version: '0.0.0' },
  { versionNegotiation: { mode: { pin: '2026-07-28' } } },
);

// A tool call must succeed and carry structured content, which the client has already
// checked against the tool's outputSchema.
async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  expect(!result.isError, `${name} answered isError: ${JSON.stringify(result.content)}`);
  expect(result.structuredContent, `${name} returned no structuredContent`);
  return result.structuredContent;
}

let basketId;
await check('ts: connects in modern mode (2026-07-28)', async () => {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  expect(era === 'modern' && version === '2026-07-28', `era ${era}, version ${version}`);
  return `${era} ${version}`;
});

await check('ts: tools/list lists the seven basket tools', async () => {
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  const want = ['add_item', 'checkout', 'create_basket', 'list_baskets', 'place_order', 'remove_item', 'view_basket'];
  expect(same(names, want), `got ${names.join(',')}`);
  return names.join(',');
});

await check('ts: create_basket returns an empty basket', async () => {
  const basket = await call('create_basket', {});
  expect(typeof basket.basket_id === 'string' && basket.basket_id, 'no basket_id');
  expect(same(lines(basket), []) && basket.total_quantity === 0, JSON.stringify(basket));
  basketId = basket.basket_id;
});

await check('ts: add_item without request_id adds the units', async () => {
  const basket = await call('add_item', { basket_id: basketId, sku: 'A-1', quantity: 2 });
  expect(same(lines(basket), ['A-1 x 2']), JSON.stringify(basket.items));
});

await check('ts: add_item with a request_id is applied once, even when repeated', async () => {
  const args = { basket_id: basketId, sku: 'B-2', quantity: 3, request_id: 'ts-client-1' };
  const first = await call('add_item', args);
  const again = await call('add_item', args);
  expect(first.total_quantity === 5, `after the first call: ${JSON.stringify(first)}`);
  expect(same(lines(again), lines(first)) && again.total_quantity === 5, `repeated: ${JSON.stringify(again)}`);
});

await check('ts: add_item with request_id null (the schema allows null) adds the units', async () => {
  const basket = await call('add_item', { basket_id: basketId, sku: 'A-1', quantity: 1, request_id: null });
  expect(basket.total_quantity === 6, JSON.stringify(basket));
});

await check('ts: view_basket shows every line', async () => {
  const basket = await call('view_basket', { basket_id: basketId });
  expect(same(lines(basket), ['A-1 x 3', 'B-2 x 3']) && basket.total_quantity === 6, JSON.stringify(basket));
});

await check('ts: list_baskets lists the basket with its lines, and refuses a forged cursor', async () => {
  const listed = await call('list_baskets', { cursor: null });
  const mine = (listed.baskets ?? []).find((b) => b.basket_id === basketId);
  expect(mine && same(lines(mine), ['A-1 x 3', 'B-2 x 3']), JSON.stringify(listed));
  const forged = await client.callTool({ name: 'list_baskets', arguments: { cursor: 'AAAA' } });
  expect(forged.isError && JSON.stringify(forged.content).includes('cursor'), JSON.stringify(forged));
});

try {
  await client.close();
} catch {
  // Closing a stateless connection has nothing to fail on that matters here.
}

await check('ts: the client printed no warnings', async () => {
  expect(warnings.length === 0, `${warnings.length} warnings:\n  ${warnings.join('\n  ')}`);
});

process.exitCode = failed ? 1 : 0;
