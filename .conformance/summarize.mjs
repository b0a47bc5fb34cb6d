// Scores one conformance run from its result folder (`server ... -o DIR`).
//
//   node summarize.mjs <label> <results-dir> <scored-scenarios-file> [<baseline.yml>]
//
// <scored-scenarios-file> lists the scored scenarios, one per line (from
// `list --server --requirements R`). A scored scenario passes when none of its checks
// failed; with a baseline, when every failing check (FAILURE or WARNING, as the suite
// counts them) is listed there. A baseline entry that now passes is stale and counts as
// a failure, as it does for the suite. Prints one line per failure and
// `<label>: N passed, M failed`; the last stdout line is `N M` for the caller.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [label, dir, scoredFile, baselineFile] = process.argv.slice(2);
const scored = readFileSync(scoredFile, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);

// Baseline: `server:` list of `scenario` or `scenario:check-id` (see spec/conformance.md §7).
const baseline = { scenarios: new Set(), checks: new Set() };
if (baselineFile) {
  let inServer = false;
  for (const raw of readFileSync(baselineFile, 'utf8').split('\n')) {
    const line = raw.replace(/#.*$/, '').trimEnd();
    if (/^\S/.test(line)) inServer = line.trim() === 'server:';
    const entry = /^\s*-\s*(\S+)\s*$/.exec(line);
    if (!inServer || !entry) continue;
    const [scenario, check] = entry[1].split(':');
    if (check) baseline.checks.add(`${scenario}:${check}`);
    else baseline.scenarios.add(scenario);
  }
}

// Result folders are `server-<scenario>-<ISO timestamp with : and . as ->`.
const checks = new Map();
for (const entry of readdirSync(dir, { withFileTypes: true })) {
  const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry.name);
  if (!entry.isDirectory() || !m) continue;
  checks.set(m[1], JSON.parse(readFileSync(join(dir, entry.name, 'checks.json'), 'utf8')));
}

const failing = (status) => status === 'FAILURE' || (baselineFile && status === 'WARNING');
let passed = 0;
let failed = 0;
for (const scenario of scored) {
  const results = checks.get(scenario);
  if (!results) {
    failed++;
    console.log(`  ✗ ${scenario}: no results`);
    continue;
  }
  const bad = [...new Set(results.filter((c) => failing(c.status)).map((c) => c.id))];
  const expected = (id) => baseline.scenarios.has(scenario) || baseline.checks.has(`${scenario}:${id}`);
  const unexpected = bad.filter((id) => !expected(id));
  const stale = [
    ...(baseline.scenarios.has(scenario) && bad.length === 0 ? [scenario] : []),
    ...[...baseline.checks]
      .filter((e) => e.startsWith(`${scenario}:`) && !bad.includes(e.slice(scenario.length + 1))),
  ];
  if (unexpected.length === 0 && stale.length === 0) {
    passed++;
    continue;
  }
  failed++;
  for (const id of unexpected) {
    const c = results.find((r) => r.id === id);
    console.log(`  ✗ ${scenario}:${id} ${c.status}: ${(c.errorMessage ?? '').split('\n')[0]}`);
  }
  for (const entry of stale) console.log(`  ✗ ${entry}: stale baseline entry (now passes)`);
}
console.log(`${label}: ${passed} passed, ${failed} failed`);
console.log(`${passed} ${failed}`);
