// What the TypeScript OAuth drivers share (ts_oauth_client.mjs, ts_builtin_client.mjs): the
// warnings the client prints, one line per check, the JWT parts, and the scripted browser.
// Imported from the install folder, beside them.

export const REDIRECT = 'http://127.0.0.1:8976/callback';

// Everything the client writes to stderr or through console.warn/console.error is a warning.
export const warnings = [];
for (const level of ['warn', 'error']) {
  console[level] = (...args) => warnings.push(`console.${level}: ${args.map(String).join(' ')}`);
}
const stderrWrite = process.stderr.write.bind(process.stderr);
process.stderr.write = (chunk, ...rest) => {
  warnings.push(`stderr: ${String(chunk).trimEnd()}`);
  return stderrWrite(chunk, ...rest);
};

let failed = 0;
/** How many checks failed so far. */
export const failures = () => failed;
export const say = (line) => process.stdout.write(`${line}\n`);
export async function check(name, body) {
  try {
    const detail = await body();
    say(`PASS ${name}${detail ? ` (${detail})` : ''}`);
  } catch (e) {
    failed++;
    const kind = e?.constructor && e.constructor !== Error ? `${e.constructor.name} ${e.code ?? ''} ` : '';
    say(`FAIL ${name}: ${kind}${e?.message ?? e}`.replace(/\n/g, ' | '));
  }
}
export function expect(cond, message) {
  if (!cond) throw new Error(message);
}

export const claims = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url'));
export const header = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url'));
const unescape = (text) =>
  text.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]);
const attr = (attrs, name) => {
  const value = new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1];
  return value === undefined ? undefined : unescape(value);
};

// The browser: GET the authorization URL, follow redirects with cookies, post each form as a
// person would (the basket's consent page: its hidden fields and the first submit button,
// decision=approve; the upstream's login: any user; its consent), stop at the redirect URI and
// return its query. Every page it was shown is kept in `pages`.
export async function signIn(authorizationUrl, login, pages = []) {
  const jar = new Map();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (response) => {
    for (const c of response.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1));
    }
  };
  let next = { url: String(authorizationUrl), init: { method: 'GET' } };
  for (let i = 0; i < 20; i++) {
    const response = await fetch(next.url, { ...next.init, redirect: 'manual', headers: { ...next.init.headers, cookie: cookie() } });
    keep(response);
    if (response.status >= 300 && response.status < 400) {
      const location = new URL(response.headers.get('location'), next.url);
      if (location.href.startsWith(REDIRECT)) return location.searchParams;
      next = { url: location.href, init: { method: 'GET' } };
      continue;
    }
    const html = await response.text();
    pages.push({ url: next.url, html });
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
    if (response.status !== 200 || !form) throw new Error(`${next.url} answered ${response.status}: ${html.slice(0, 500)}`);
    const fields = new URLSearchParams();
    for (const [, attrs] of form[2].matchAll(/<input([^>]*)>/g)) {
      const name = attr(attrs, 'name');
      if (name) fields.set(name, attr(attrs, 'value') ?? '');
    }
    // A click on the form's first named submit button sends its name and value.
    for (const [, attrs] of form[2].matchAll(/<button([^>]*)>/g)) {
      const name = attr(attrs, 'name');
      if (name && (attr(attrs, 'type') ?? 'submit') === 'submit') {
        fields.set(name, attr(attrs, 'value') ?? '');
        break;
      }
    }
    if (fields.has('login')) {
      fields.set('login', login);
      fields.set('password', 'any password');
    }
    next = {
      url: new URL(unescape(form[1]), next.url).href,
      init: { method: 'POST', body: fields.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    };
  }
  throw new Error('the authorization did not come back to the redirect URI');
}
