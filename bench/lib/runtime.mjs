// The shared runtime of the core suites (http, refresh, writes, browser, append, verify): the
// bundled Worker, the baseline Worker, the audit driver, the browser driver and the OAuth peer
// (@cloudflare/workers-oauth-provider) in one workerd
// through Miniflare's API (not `wrangler dev`, whose proxy costs 15-20x), started and seeded
// once per run. Each Worker gets a direct socket so requests skip Miniflare's entry router too.
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { serviceConfig } from "./config.mjs";
import {
  baselineModules,
  besideService,
  bundleDriver,
  d1IdOf,
  driverModules,
  getJson,
  ROOT,
  SERVICE,
  serviceWorker,
  startMiniflare,
} from "./harness.mjs";
import { addAgents, applyMigrations, signup } from "./seed.mjs";

export { SERVICE };
export const BASELINE = "bench-baseline";
export const AUDIT = "bench-audit";
export const BROWSER = "bench-browser";
export const OAUTH_PEER = "bench-oauth-peer";
/** Agents added to the bench workspace besides the one sign-up creates. */
const EXTRA_AGENTS = 11;

export async function startRuntime(root, bundle) {
  const config = serviceConfig(root);
  const service = serviceWorker(bundle, config);
  const d1Id = d1IdOf(config);
  const common = besideService(config);
  const baseline = {
    ...common,
    name: BASELINE,
    ...baselineModules("baseline-worker.mjs"),
    d1Databases: { DB: d1Id },
  };
  const audit = {
    ...common,
    name: AUDIT,
    ...baselineModules("audit-worker.mjs"),
    durableObjects: {
      AUDIT_LOG: { className: "AuditLog", scriptName: SERVICE, useSQLite: true },
      BASELINE_LOG: { className: "BaselineLog", useSQLite: true },
    },
  };
  const browser = {
    ...common,
    name: BROWSER,
    ...baselineModules("browser-driver.mjs"),
    durableObjects: { BROWSER_SESSION: { className: "BrowserSession", scriptName: SERVICE, useSQLite: true } },
  };
  // @cloudflare/workers-oauth-provider, the peer of the refresh grant: bundled with esbuild.
  const oauthPeer = {
    ...common,
    // Without it the library logs at start that it cannot fetch client metadata documents.
    compatibilityFlags: [...(common.compatibilityFlags ?? []), "global_fetch_strictly_public"],
    name: OAUTH_PEER,
    ...driverModules(bundleDriver("oauth-provider-worker.mjs")),
    kvNamespaces: { OAUTH_KV: "bench-oauth-peer-kv" },
  };
  const mf = startMiniflare([service, baseline, audit, browser, oauthPeer]);
  await mf.ready;
  const urls = {
    service: await mf.unsafeGetDirectURL(SERVICE),
    baseline: await mf.unsafeGetDirectURL(BASELINE),
    audit: await mf.unsafeGetDirectURL(AUDIT),
    browser: await mf.unsafeGetDirectURL(BROWSER),
    oauthPeer: await mf.unsafeGetDirectURL(OAUTH_PEER),
  };
  return { mf, urls, db: await mf.getD1Database("DB", SERVICE) };
}

/**
 * Starts the runtime and seeds it: the migrations, 3 other workspaces with 5 agents each, and
 * the bench workspace (`main`) with 12; checks that the baseline's `/v1/agents` body is ours.
 */
export async function startCore({ bundle, step, check }) {
  step("starting workerd through Miniflare (service, baseline, audit driver, browser driver)");
  const { mf, urls, db } = await startRuntime(ROOT, bundle);
  try {
    const applied = await applyMigrations(db, path.join(ROOT, "migrations"));
    step(`applied ${applied.length} D1 migration(s); signing up workspaces`);
    const others = [];
    for (let i = 0; i < 3; i++) others.push(await signup(urls.service, `Other ${i}`));
    for (const o of others) await addAgents(db, o.workspaceId, 5);
    const main = await signup(urls.service, "Bench Workspace");
    await addAgents(db, main.workspaceId, EXTRA_AGENTS);

    const auth = { authorization: `Bearer ${main.token}` };
    const agentsUrl = (base) => new URL("/v1/agents", base).href;
    const ours = await getJson(agentsUrl(urls.service), { headers: auth });
    const base = await getJson(agentsUrl(urls.baseline), { headers: auth });
    check(
      ours.agents.length === EXTRA_AGENTS + 1,
      `GET /v1/agents returned ${ours.agents.length} agents, expected ${EXTRA_AGENTS + 1}`,
    );
    check(
      isDeepStrictEqual(ours, base),
      "the baseline's /v1/agents body differs from ours: it would not be doing the same work",
    );
    step(
      `seeded: ${ours.agents.length} agents in the bench workspace; baseline body identical to ours: ${isDeepStrictEqual(ours, base)}`,
    );
    const auditUrl = (p, q) => new URL(`/${p}?${new URLSearchParams(q)}`, urls.audit).href;
    return { mf, urls, db, main, auth, agentsUrl, auditUrl };
  } catch (e) {
    await mf.dispose();
    throw e;
  }
}
