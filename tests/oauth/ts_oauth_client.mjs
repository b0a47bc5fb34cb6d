// The TypeScript SDK v2 client's OAuth (@modelcontextprotocol/client 2.4.0: the transport's
// `authProvider` with an OAuthClientProvider, `auth()` behind it, `finishAuth`) against the
// basket with auth on and the real authorization server (oidc-provider) of
// scripts/oauth-tests.sh, pinned to 2026-07-28:
//
//   1. the first tools/call is refused 401; the client discovers the AS from the
//      protected-resource metadata, registers, and sends the browser to authorize with PKCE
//      S256 and the resource; after finishAuth the call succeeds with an at+jwt for this server;
//   2. a second connection on the stored tokens calls without a new authorization;
//   3. a read-only token gets 403 insufficient_scope on checkout; the transport steps up
//      (re-authorization with the wider scope) and, after finishAuth, the call succeeds;
//   and the client printed no warnings.
//
//   node ts_oauth_client.mjs MCP_URL ISSUER
//
// Run by tests/oauth/test_oauth_ts.py from the folder the client is installed in. Prints one
// line per check, `PASS <name>` or `FAIL <name>: <why>`; exits non-zero if any failed. The
// browser is scripted: it follows the AS's login and consent forms, keeping cookies.
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

import { REDIRECT, check, claims, expect, failures, header, say, signIn, warnings } from './oauth_harness.mjs';

const [url, issuer] = process.argv.slice(2);
if (!url || !issuer) {
  process.stdout.write('usage: node ts_oauth_client.mjs MCP_URL ISSUER\n');
  process.exit(2);
}

const events = async () => (await fetch(`${issuer}/_test/events`)).json();
const since = async (mark, kind, clientId) =>
  (await events()).slice(mark).filter((e) => e.event === kind && (!clientId || e.client_id === clientId));

// An OAuthClientProvider kept in memory, as an app keeps it in its store.
class MemoryProvider {
  constructor(name) {
    this.name = name;
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.discovery = undefined;
    this.authorizationUrls = [];
  }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.info; }
  saveClientInformation(info) { this.info = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  redirectToAuthorization(authorizationUrl) { this.authorizationUrls.push(new URL(authorizationUrl)); }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
  discoveryState() { return this.discovery; }
  saveDiscoveryState(state) { this.discovery = state; }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'client') this.info = undefined;
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }
}

// Every request the client sends, with its answer's status.
const sent = [];
const loggingFetch = async (input, init) => {
  const response = await fetch(input, init);
  sent.push({ method: init?.method ?? 'GET', url: String(input instanceof Request ? input.url : input), status: response.status });
  return response;
};

function connection(provider) {
  const client = new Client(
    { name: 'mcp-lambda-oauth-tests', version: '0.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: loggingFetch });
  return { client, transport };
}

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  expect(!result.isError, `${name} answered isError: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

// A call that needs the browser: the transport throws UnauthorizedError after sending the
// browser off (redirectToAuthorization); the app finishes with the callback's query and retries.
async function callAuthorizing(conn, provider, login, name, args) {
  try {
    return { result: await call(conn.client, name, args), authorized: false };
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    const asked = provider.authorizationUrls.at(-1);
    expect(asked, `UnauthorizedError without a redirect: ${e.message}`);
    const back = await signIn(asked, login);
    expect(back.get('code'), `the AS redirected back with ${back}`);
    await conn.transport.finishAuth(back);
    return { result: await call(conn.client, name, args), authorized: true };
  }
}

const provider = new MemoryProvider('ts oauth client');
let basketId;
let mark = (await events()).length;
await check('ts: the first call is refused 401, then discovery, registration, authorization and the call succeed', async () => {
  const conn = connection(provider);
  await conn.client.connect(conn.transport);
  const { result, authorized } = await callAuthorizing(conn, provider, 'dora', 'create_basket', {});
  expect(authorized, 'the call went through without an authorization');
  basketId = result.basket_id;
  expect(typeof basketId === 'string', `no basket_id: ${JSON.stringify(result)}`);
  const origin = new URL(url).origin;
  const seq = sent.map((r) => `${r.method} ${r.url.split('?')[0]} ${r.status}`);
  const first401 = seq.indexOf(`POST ${url} 401`);
  expect(first401 >= 0, `no 401: ${seq.join(', ')}`);
  expect(seq.slice(first401).includes(`GET ${origin}/.well-known/oauth-protected-resource/mcp 200`), `no protected-resource metadata: ${seq.join(', ')}`);
  const asked = provider.authorizationUrls[0];
  expect(asked.origin === issuer && asked.searchParams.get('resource') === url, `authorization URL ${asked}`);
  expect(asked.searchParams.get('code_challenge_method') === 'S256' && asked.searchParams.get('code_challenge'), `no PKCE: ${asked}`);
  const clientId = provider.info?.client_id;
  const regs = await since(mark, 'registration');
  expect(regs.length === 1 && regs[0].client_id === clientId, `registrations ${JSON.stringify(regs)}`);
  const auths = await since(mark, 'authorization', clientId);
  expect(auths.length === 1 && auths[0].resource === url, `authorizations ${JSON.stringify(auths)}`);
  const grants = (await since(mark, 'token', clientId)).map((e) => e.grant_type);
  expect(grants.join() === 'authorization_code', `token grants ${grants}`);
  const token = provider.saved.access_token;
  expect(header(token).typ === 'at+jwt', `header ${JSON.stringify(header(token))}`);
  const c = claims(token);
  expect(c.aud === url && c.iss === issuer && c.sub === 'dora' && c.client_id === clientId, `claims ${JSON.stringify(c)}`);
  await conn.client.close();
  return `client ${clientId}, scope "${c.scope}"`;
});

await check('ts: a second connection on the stored tokens calls without a new authorization', async () => {
  mark = (await events()).length;
  const before = provider.saved?.access_token;
  const from = sent.length;
  const conn = connection(provider);
  await conn.client.connect(conn.transport);
  const viewed = await call(conn.client, 'view_basket', { basket_id: basketId });
  expect(viewed.basket_id === basketId, `view ${JSON.stringify(viewed)}`);
  const statuses = sent.slice(from).filter((r) => r.url === url).map((r) => r.status);
  expect(!statuses.includes(401), `statuses ${statuses}`);
  const after = await events();
  expect(after.length === mark, `the AS saw ${JSON.stringify(after.slice(mark))}`);
  expect(provider.authorizationUrls.length === 1 && provider.saved.access_token === before, 'tokens changed');
  await conn.client.close();
});

await check('ts: a read-only token gets 403 insufficient_scope on checkout, the client steps up and the call succeeds', async () => {
  const reader = new MemoryProvider('ts step-up client');
  const conn = connection(reader);
  await conn.client.connect(conn.transport);
  const created = (await callAuthorizing(conn, reader, 'erin', 'create_basket', {})).result;
  await call(conn.client, 'add_item', { basket_id: created.basket_id, sku: 'tea', quantity: 1 });
  const granted = claims(reader.saved.access_token).scope.split(' ');
  expect(granted.includes('basket:read') && !granted.includes('basket:write'), `first token's scope ${granted}`);
  const from = sent.length;
  mark = (await events()).length;
  const { result, authorized } = await callAuthorizing(conn, reader, 'erin', 'checkout', { basket_id: created.basket_id });
  expect(authorized, 'checkout went through without a new authorization');
  expect(result.basket_id === created.basket_id, `checkout ${JSON.stringify(result)}`);
  const statuses = sent.slice(from).filter((r) => r.url === url).map((r) => r.status);
  expect(statuses[0] === 403, `statuses ${statuses}`);
  const auths = await since(mark, 'authorization', reader.info.client_id);
  expect(auths.length === 1 && auths[0].scope.split(' ').includes('basket:write'), `authorizations ${JSON.stringify(auths)}`);
  expect((await since(mark, 'registration')).length === 0, 'registered again');
  const scope = claims(reader.saved.access_token).scope.split(' ');
  expect(scope.includes('basket:read') && scope.includes('basket:write'), `stepped-up scope ${scope}`);
  await conn.client.close();
  return `statuses ${statuses.join(',')}`;
});

await check('ts: the client printed no warnings', async () => {
  expect(warnings.length === 0, `${warnings.length} warnings:\n  ${warnings.join('\n  ')}`);
});

process.exitCode = failures() ? 1 : 0;
