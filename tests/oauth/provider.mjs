// The authorization server of scripts/oauth-tests.sh: oidc-provider 9 (a certified OpenID
// Provider) on http://127.0.0.1:PORT, configured as an MCP server's AS needs it:
//
//   - dynamic client registration (RFC 7591), PKCE S256 required for every client;
//   - resource indicators (RFC 8707): any http://127.0.0.1:*/… resource is a resource server
//     with the scopes basket:read basket:write, audience = the resource; its access tokens are
//     JWTs (`typ: at+jwt`, ES256), or opaque for clients registered with
//     `x_access_token_format: "opaque"` (the introspection tests: oidc-provider refuses to
//     introspect its own JWT access tokens);
//   - introspection (RFC 7662), revocation (RFC 7009), client_credentials, refresh tokens for
//     every client allowed the refresh_token grant, and devInteractions (a login form that
//     takes any login as the subject, then a consent form) which the tests post as a script;
//   - access tokens live ACCESS_TTL (3600 s) except for clients whose client_name starts with
//     "short-ttl", whose tokens live OAUTH_SHORT_TTL_SECS (default 3 s): the refresh test;
//   - a client registering with a `scope` is registered for every scope of this AS: by default
//     oidc-provider refuses a client any scope it did not register, and the MCP clients
//     register with the scope of the first challenge, so a step-up would be refused by the AS
//     (OAUTH_KEEP_REGISTERED_SCOPE=1 keeps oidc-provider's default, to see that).
//
//   - OAUTH_NO_REGISTRATION=1 turns dynamic registration off, leaving the static clients only
//     (among them `mcp-facade`, the built-in authorization server's client), as the identity
//     providers behind mcp-lambda's built-in authorization server behave;
//
// Besides the provider's own endpoints it answers GET /_test/events: every event the tests
// count (registrations, authorizations, token grants by grant_type, revocations) as JSON; and
// GET /_test/requests: how many requests it has answered (the tests' own not counted).
//
//   node provider.mjs PORT        (or OAUTH_PORT=PORT node provider.mjs)
//
// Prints `listening <issuer>` on stdout once it accepts connections. Loopback only.
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';

import Provider, { errors } from 'oidc-provider';

const port = Number(process.argv[2] ?? process.env.OAUTH_PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: node provider.mjs PORT\n');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const ACCESS_TTL = 3600;
const SHORT_TTL = Number(process.env.OAUTH_SHORT_TTL_SECS ?? 3);
const RESOURCE_SCOPES = 'basket:read basket:write';

// Fresh keys per run: RS256 for ID tokens (OIDC requires it), ES256 for access tokens.
const privateJwk = (type, options, alg, kid) => ({
  ...generateKeyPairSync(type, options).privateKey.export({ format: 'jwk' }),
  alg,
  use: 'sig',
  kid,
});
const keys = [
  privateJwk('rsa', { modulusLength: 2048 }, 'RS256', 'rs-1'),
  privateJwk('ec', { namedCurve: 'P-256' }, 'ES256', 'es-1'),
];

// Statically registered clients. Secrets are fixed: the tests (and the basket's
// MCP_AUTH_INTROSPECTION_CLIENT_SECRET) know them.
const redirect = 'http://127.0.0.1/callback';
const app = (clientId, format) => ({
  client_id: clientId,
  application_type: 'native', // loopback redirect, any port (RFC 8252 §7.3)
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  redirect_uris: [redirect],
  x_access_token_format: format,
});
const machine = (clientId, format) => ({
  client_id: clientId,
  client_secret: `${clientId}-secret`,
  token_endpoint_auth_method: 'client_secret_basic',
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  x_access_token_format: format,
});
// The built-in authorization server's client here (test_builtin_as.py): confidential, as a
// façade registers at Cognito, Entra or Google; native, so that its loopback callback may use
// any port (RFC 8252 §7.3): each basket listens on a free one.
// It may refresh (the provider's tokens kept for tools: test_builtin_upstream.py);
// `mcp-facade-short`'s access tokens live OAUTH_SHORT_TTL_SECS, for the refresh.
const facade = (clientId, name) => ({
  client_id: clientId,
  client_secret: `${clientId}-secret`,
  client_name: name,
  application_type: 'native',
  token_endpoint_auth_method: 'client_secret_basic',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  redirect_uris: ['http://127.0.0.1/oauth/callback'],
});
const clients = [
  facade('mcp-facade', 'mcp-lambda facade'),
  facade('mcp-facade-short', 'short-ttl mcp-lambda facade'),
  machine('mcp-server'), // the basket's own client, for its introspection calls
  machine('opaque-machine-a', 'opaque'),
  machine('opaque-machine-b', 'opaque'),
  machine('jwt-machine', 'jwt'),
  app('opaque-app', 'opaque'),
  app('jwt-app', 'jwt'),
];

const events = [];
const record = (event, ctx, extra = {}) =>
  events.push({
    event,
    at: Date.now() / 1000,
    client_id: ctx?.oidc?.client?.clientId ?? ctx?.oidc?.params?.client_id,
    grant_type: ctx?.oidc?.params?.grant_type,
    ...extra,
  });

const configuration = {
  clients,
  jwks: { keys },
  // Every scope a client may register with. basket:* are the resource server's too.
  scopes: ['openid', 'offline_access', 'basket:read', 'basket:write'],
  claims: { openid: ['sub'] },
  pkce: { required: () => true },
  extraClientMetadata: {
    properties: ['x_access_token_format'],
    validator(ctx, key, value, metadata) {
      if (value !== undefined && value !== 'jwt' && value !== 'opaque') {
        throw new errors.InvalidClientMetadata('x_access_token_format must be "jwt" or "opaque"');
      }
      // A client registers with the scope of the challenge that sent it (the MCP clients do),
      // and oidc-provider then refuses any other scope from it: a step-up to basket:write
      // would be refused by the AS. RFC 7591 §3.2.1 lets the AS replace the requested
      // metadata: a client that names a scope is registered for every scope this AS has;
      // what it gets is still what it asks for at authorization and consents to.
      if (key === 'x_access_token_format' && metadata.scope !== undefined && process.env.OAUTH_KEEP_REGISTERED_SCOPE !== '1') {
        metadata.scope = configuration.scopes.join(' ');
      }
    },
  },
  features: {
    devInteractions: { enabled: true },
    // OAUTH_NO_REGISTRATION=1: as Cognito, Entra and Google behave (the built-in AS's tests).
    registration: { enabled: process.env.OAUTH_NO_REGISTRATION !== '1' },
    introspection: { enabled: true },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A request without `resource` gets no resource server (its token is for userinfo only);
      // one resource requested at authorization is used at the token endpoint too.
      defaultResource: (ctx, client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, resourceIndicator, client) {
        const url = new URL(resourceIndicator);
        if (url.protocol !== 'http:' || url.hostname !== '127.0.0.1') {
          throw new errors.InvalidTarget(`${resourceIndicator} is not a resource of this AS`);
        }
        const format = client.metadata().x_access_token_format === 'opaque' ? 'opaque' : 'jwt';
        const short = (client.clientName ?? '').startsWith('short-ttl');
        return {
          scope: RESOURCE_SCOPES,
          audience: resourceIndicator,
          accessTokenTTL: short ? SHORT_TTL : ACCESS_TTL,
          accessTokenFormat: format,
          ...(format === 'jwt' ? { jwt: { sign: { alg: 'ES256' } } } : {}),
        };
      },
    },
  },
  // Refresh tokens for every client allowed the grant, offline_access or not.
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: {
    AccessToken: (ctx, token, client) =>
      token.resourceServer?.accessTokenTTL
      ?? ((client?.clientName ?? '').startsWith('short-ttl') ? SHORT_TTL : ACCESS_TTL),
    ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? ACCESS_TTL,
    AuthorizationCode: 60,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 3600,
    Session: 3600,
  },
};

const provider = new Provider(issuer, configuration);
provider.on('registration_create.success', (ctx, client) =>
  record('registration', ctx, { client_id: client.clientId, client_name: client.clientName }));
provider.on('authorization.success', (ctx) =>
  record('authorization', ctx, { scope: ctx.oidc.params.scope, resource: ctx.oidc.params.resource }));
provider.on('grant.success', (ctx) => record('token', ctx));
provider.on('grant.error', (ctx, error) => record('token_error', ctx, { error: error.message }));
provider.on('authorization.error', (ctx, error) => record('authorization_error', ctx, { error: error.message }));
provider.on('registration_create.error', (ctx, error) => record('registration_error', ctx, { error: error.message }));
provider.on('introspection.error', (ctx, error) => record('introspection_error', ctx, { error: error.message }));
provider.on('revocation.error', (ctx, error) => record('revocation_error', ctx, { error: error.message }));
provider.on('server_error', (ctx, error) => {
  record('server_error', ctx, { error: String(error?.stack ?? error) });
  process.stderr.write(`server_error: ${error?.stack ?? error}\n`);
});

const callback = provider.callback();
let requests = 0; // every request but the tests' own: what "no call reached the AS" counts
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/_test/requests') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ requests }));
    return;
  }
  requests++;
  if (req.method === 'GET' && req.url === '/_test/events') {
    requests--;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(events));
    return;
  }
  if (req.method === 'POST' && new URL(req.url, issuer).pathname === '/token/revocation') {
    // oidc-provider emits no event on a successful revocation: count it here.
    res.on('finish', () => events.push({ event: 'revocation', at: Date.now() / 1000, status: res.statusCode }));
  }
  callback(req, res);
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${issuer}\n`));
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
