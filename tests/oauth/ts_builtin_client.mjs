// The TypeScript SDK v2 client's OAuth (@modelcontextprotocol/client 2.4.0) against the basket as
// its own authorization server (MCP_OAUTH_UPSTREAM_ISSUER), in front of the upstream
// oidc-provider of tests/oauth/test_builtin_as.py, pinned to 2026-07-28:
//
//   dcr:  the first tools/call is refused 401; the client discovers the basket's AS from the
//         protected-resource metadata, registers at /oauth/register (an `mcp_…` client id), sends
//         the browser to /oauth/authorize with PKCE S256 and the resource; the scripted browser
//         approves on the consent page and logs in upstream; after finishAuth the call succeeds
//         with an at+jwt of the basket's origin for the MCP URL;
//   cimd: the same, but the provider has a `clientMetadataUrl` and the AS advertises
//         client_id_metadata_document_supported: the client id is the document's URL and
//         nothing is registered (the basket fetches the document; this client never does);
//   both: a refused access token is refreshed (rotation) and the call succeeds, and the client
//         printed no warnings.
//
//   node ts_builtin_client.mjs dcr  MCP_URL UPSTREAM_ISSUER
//   node ts_builtin_client.mjs cimd MCP_URL UPSTREAM_ISSUER DOCUMENT_URL
//
// Run by tests/oauth/test_builtin_ts.py from the folder the client is installed in. Prints one
// line per check, `PASS <name>` or `FAIL <name>: <why>`; exits non-zero if any failed. Node's
// fetch trusts nothing special: the client talks to the basket and the upstream over http on
// loopback; only the basket fetches the https document.
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

import { REDIRECT, check, claims, expect, failures, header, say, signIn, warnings } from './oauth_harness.mjs';

const [mode, url, upstream, documentUrl] = process.argv.slice(2);
if (!['dcr', 'cimd'].includes(mode) || !url || !upstream || (mode === 'cimd') !== Boolean(documentUrl)) {
  process.stdout.write('usage: node ts_builtin_client.mjs dcr|cimd MCP_URL UPSTREAM_ISSUER [DOCUMENT_URL]\n');
  process.exit(2);
}
const origin = new URL(url).origin;
const upstreamEvents = async () => (await fetch(`${upstream}/_test/events`)).json();


// An OAuthClientProvider kept in memory, as an app keeps it in its store; with a
// `clientMetadataUrl` in cimd mode.
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
  get clientMetadataUrl() { return documentUrl; }
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
const sequence = (from = 0) => sent.slice(from).map((r) => `${r.method} ${r.url.split('?')[0]} ${r.status}`);

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

const name = `ts ${mode} client`;
const provider = new MemoryProvider(name);
const pages = [];
let basketId;
await check(`ts builtin ${mode}: the first call is refused 401, then discovery, ${mode === 'dcr' ? 'registration' : 'the metadata document'}, consent, the upstream login and the call succeed`, async () => {
  const upstreamMark = (await upstreamEvents()).length;
  const conn = connection(provider);
  await conn.client.connect(conn.transport);
  let authorized = false;
  try {
    await call(conn.client, 'create_basket', {});
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    const asked = provider.authorizationUrls.at(-1);
    expect(asked, `UnauthorizedError without a redirect: ${e.message}`);
    const back = await signIn(asked, 'tess', pages);
    expect(back.get('code') && back.get('iss') === origin, `the AS redirected back with ${back}`);
    await conn.transport.finishAuth(back);
    authorized = true;
  }
  expect(authorized, 'the call went through without an authorization');
  const created = await call(conn.client, 'create_basket', {});
  basketId = created.basket_id;
  expect(typeof basketId === 'string', `no basket_id: ${JSON.stringify(created)}`);

  const seq = sequence();
  const first401 = seq.indexOf(`POST ${url} 401`);
  expect(first401 >= 0, `no 401: ${seq.join(', ')}`);
  expect(seq.includes(`GET ${origin}/.well-known/oauth-protected-resource/mcp 200`), `no protected-resource metadata: ${seq.join(', ')}`);
  expect(seq.some((r) => r.startsWith(`GET ${origin}/.well-known/oauth-authorization-server`) && r.endsWith(' 200')), `no AS metadata: ${seq.join(', ')}`);
  expect(seq.includes(`POST ${origin}/oauth/token 200`), `no token request: ${seq.join(', ')}`);
  expect(seq.at(-1) === `POST ${url} 200`, `the last request: ${seq.join(', ')}`);
  const registrations = seq.filter((r) => r.startsWith(`POST ${origin}/oauth/register`));
  const clientId = provider.info?.client_id;
  if (mode === 'dcr') {
    expect(registrations.join() === `POST ${origin}/oauth/register 201`, `registrations: ${seq.join(', ')}`);
    expect(/^mcp_/.test(clientId), `client id ${clientId}`);
  } else {
    expect(registrations.length === 0, `registered: ${seq.join(', ')}`);
    expect(clientId === documentUrl, `client id ${clientId}`);
  }
  expect(!seq.some((r) => r.includes('https:')), `the client fetched over https: ${seq.join(', ')}`);

  expect(provider.authorizationUrls.length === 1, `authorization URLs ${provider.authorizationUrls.join(' ')}`);
  const asked = provider.authorizationUrls[0];
  expect(asked.origin + asked.pathname === `${origin}/oauth/authorize`, `authorization URL ${asked}`);
  expect(asked.searchParams.get('client_id') === clientId && asked.searchParams.get('resource') === url, `authorization URL ${asked}`);
  expect(asked.searchParams.get('code_challenge_method') === 'S256' && asked.searchParams.get('code_challenge'), `no PKCE: ${asked}`);

  // The browser saw the basket's consent page, naming the client, before the upstream's login.
  const consent = pages.find((p) => p.url.startsWith(`${origin}/oauth/authorize`));
  expect(consent, `no consent page among ${pages.map((p) => p.url).join(' ')}`);
  const shown = mode === 'dcr' ? name : 'a client metadata document on <strong>127.0.0.1</strong>';
  expect(consent.html.includes(shown), `the consent page does not show ${shown}: ${consent.html.slice(0, 1500)}`);
  expect(pages.some((p) => p.url.startsWith(upstream)), `no upstream page among ${pages.map((p) => p.url).join(' ')}`);
  const kinds = (await upstreamEvents()).slice(upstreamMark).map((e) => `${e.event} ${e.client_id}`);
  expect(kinds.includes('authorization mcp-facade') && kinds.includes('token mcp-facade'), `upstream events ${kinds}`);

  const token = provider.saved.access_token;
  expect(header(token).typ === 'at+jwt' && header(token).alg === 'ES256', `header ${JSON.stringify(header(token))}`);
  const c = claims(token);
  expect(c.iss === origin && c.aud === url && c.sub === 'tess' && c.client_id === clientId, `claims ${JSON.stringify(c)}`);
  expect(provider.saved.refresh_token, 'no refresh token');
  await conn.client.close();
  return `client ${clientId}, scope "${c.scope}"`;
});

await check(`ts builtin ${mode}: a refused access token is refreshed and the call succeeds`, async () => {
  const before = provider.saved;
  expect(before?.refresh_token, 'no tokens from the first check');
  // The app's stored access token no longer verifies (as after a key rotation or expiry): the
  // transport gets a 401, refreshes with the stored refresh token and retries.
  provider.saved = { ...before, access_token: `${before.access_token.slice(0, -4)}AAAA` };
  const from = sent.length;
  const conn = connection(provider);
  await conn.client.connect(conn.transport);
  const viewed = await call(conn.client, 'view_basket', { basket_id: basketId });
  expect(viewed.basket_id === basketId, `view ${JSON.stringify(viewed)}`);
  const seq = sequence(from);
  expect(seq.includes(`POST ${url} 401`) && seq.includes(`POST ${origin}/oauth/token 200`) && seq.at(-1) === `POST ${url} 200`, `requests ${seq.join(', ')}`);
  expect(provider.authorizationUrls.length === 1, 'a new authorization was asked for');
  expect(!seq.some((r) => r.includes('/oauth/register')), `registered again: ${seq.join(', ')}`);
  expect(provider.saved.refresh_token && provider.saved.refresh_token !== before.refresh_token, 'the refresh token was not rotated');
  const c = claims(provider.saved.access_token);
  expect(c.iss === origin && c.aud === url && c.client_id === provider.info.client_id, `claims ${JSON.stringify(c)}`);
  await conn.client.close();
});

await check(`ts builtin ${mode}: the client printed no warnings`, async () => {
  expect(warnings.length === 0, `${warnings.length} warnings:\n  ${warnings.join('\n  ')}`);
});

process.exitCode = failures() ? 1 : 0;
