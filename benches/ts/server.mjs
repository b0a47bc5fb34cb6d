// The TypeScript SDK v2 peer for benches/side-by-side.sh: the same three tools with the same
// JSON answers as test-support/src/tools.rs, served statelessly by `createMcpHandler` (a fresh
// McpServer per request, as the SDK intends), JSON responses, on plain node:http.
//
// Run with: PORT=3102 node benches/ts/server.mjs   (127.0.0.1 only)
import http from 'node:http';
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

const port = Number(process.env.PORT ?? 3102);

const schemas = {
  echo: {
    type: 'object',
    properties: { message: { type: 'string', description: 'The text to send back.' } },
    required: ['message'],
  },
  add: {
    type: 'object',
    properties: {
      a: { type: 'integer', description: 'The first addend.' },
      b: { type: 'integer', description: 'The second addend.' },
    },
    required: ['a', 'b'],
  },
  upper: {
    type: 'object',
    properties: { text: { type: 'string', description: 'The text to upper-case.' } },
    required: ['text'],
  },
};
const inputs = Object.fromEntries(Object.entries(schemas).map(([k, v]) => [k, fromJsonSchema(v)]));
const text = (t) => ({ content: [{ type: 'text', text: t }] });

function factory() {
  const server = new McpServer({ name: 'bench', version: '1.0.0' });
  server.registerTool('echo', { description: 'Answers with the message it was sent.', inputSchema: inputs.echo },
    async ({ message }) => text(message));
  server.registerTool('add', { description: 'Adds two integers.', inputSchema: inputs.add },
    async ({ a, b }) => text(String(a + b)));
  server.registerTool('upper', { description: 'Upper-cases a text.', inputSchema: inputs.upper },
    async ({ text: t }) => text(t.toUpperCase()));
  return server;
}

const handler = toNodeHandler(createMcpHandler(factory, { responseMode: 'json' }));
const server = http.createServer((req, res) => {
  if (req.url === '/mcp') return void handler(req, res);
  res.writeHead(404).end();
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1');
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
