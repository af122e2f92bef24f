// The refresh-token grant under load. Every request rotates its token, so every request
// needs a refresh token never presented before: each target gets its own public client and a
// pool of grants with one live refresh token each, written straight into D1 (hash = SHA-256
// hex, as src/oauth/token-pairs.ts stores it) and topped up between runs, outside measured time.
// Each token is handed out exactly once through autocannon's setupRequest; a run makes a
// fixed number of requests (`amount`) sized from the previous run's rate, so the pool never
// runs dry and is never over-seeded. autocannon reports such a run's duration rounded up to
// its next 1-second sample tick, so the run is timed here: start to last response.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";

const SCOPES = JSON.stringify(["agents:read", "profile:read"]);
const SCOPE_STRING = "agents:read profile:read";
// D1 refuses statements over 100 KB; a token row is about 250 bytes.
const ROWS_PER_INSERT = 200;
// The first run (the warm-up) has no rate to size it from: about a second at the rate seen here.
const FIRST_RUN_REQUESTS = 800;

const sha256Hex = (s) => createHash("sha256").update(s).digest("hex");
// Every value inlined below is a UUID, a hex digest, an ISO time or a fixed id: no quoting needed.
const values = (rows) => rows.map((r) => `(${r.map((v) => `'${v}'`).join(", ")})`).join(",\n");

/** A public client (auth method none) owned by the workspace, like one registered through /v1/oauth/register. */
export async function addPublicClient(db, { clientId, workspaceId, userId }) {
  const now = new Date().toISOString();
  await db
    .prepare(
      `INSERT INTO oauth_clients (client_id, workspace_id, created_by, name, redirect_uris, scopes, grant_types, response_types,
         auth_method, first_party, issued_at, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'none', 0, ?9, ?10, ?10)`,
    )
    .bind(
      clientId,
      workspaceId,
      userId,
      `Bench ${clientId}`,
      JSON.stringify(["http://127.0.0.1/callback"]),
      SCOPES,
      JSON.stringify(["authorization_code", "refresh_token"]),
      JSON.stringify(["code"]),
      Math.floor(Date.now() / 1000),
      now,
    )
    .run();
}

/** `count` new grants of the client, each with one live refresh token; returns the tokens. */
export async function seedGrants(db, { clientId, workspaceId, userId }, count) {
  const now = Date.now();
  const created = new Date(now).toISOString();
  const expires = new Date(now + 30 * 86_400_000).toISOString();
  const tokens = [];
  const statements = [];
  for (let done = 0; done < count; done += ROWS_PER_INSERT) {
    const grants = [];
    const rows = [];
    for (let i = done; i < Math.min(count, done + ROWS_PER_INSERT); i++) {
      const grantId = randomUUID();
      const token = `svc_rt_${randomBytes(32).toString("base64url")}`;
      tokens.push(token);
      grants.push([grantId, workspaceId, userId, clientId, SCOPES, created]);
      rows.push([randomUUID(), grantId, "refresh", sha256Hex(token), created, expires]);
    }
    statements.push(
      db.prepare(
        `INSERT INTO oauth_grants (id, workspace_id, user_id, client_id, scopes, created_at) VALUES ${values(grants)}`,
      ),
      db.prepare(
        `INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, created_at, expires_at) VALUES ${values(rows)}`,
      ),
    );
  }
  await db.batch(statements);
  return tokens;
}

/** A token response of the service: Bearer, 3600 s, the seeded grants' scopes, its token prefixes. */
const serviceTokenResponse = (b) =>
  b.token_type === "Bearer" &&
  b.expires_in === 3600 &&
  b.scope === SCOPE_STRING &&
  b.access_token?.startsWith("svc_at_") &&
  b.refresh_token?.startsWith("svc_rt_");

/**
 * An autocannon target for `measureAlternating` that POSTs refresh_token grants to
 * `url`, one pool token per request. Counts what came back across all its runs, warm-up
 * included: 200s, other answers, and the new refresh tokens (which must all be distinct).
 * The pool is seeded into D1 for the service's client; another target (the peer) brings its
 * own `seed(count)` and `isTokenResponse(body)`.
 */
export function refreshTarget(
  db,
  { name, url, connections, clientId, workspaceId, userId, seed, isTokenResponse = serviceTokenResponse },
) {
  const pool = [];
  let next = 0;
  let rate = null;
  let runStart = 0;
  let lastResponse = 0;
  const stats = { handedOut: 0, ok: 0, notOk: 0, badBodies: 0, issued: new Set(), seeded: 0, firstError: null };
  const owner = { clientId, workspaceId, userId };
  const target = {
    name,
    url,
    connections,
    stats,
    // The audit delivery of ours runs in 100 ms rounds after the answers.
    settleMs: 500,
    /** Per run: sizes it from the last rate, tops the pool up, and hands tokens out one by one. */
    async prepare(seconds) {
      const amount = Math.max(connections * 4, Math.round(rate === null ? FIRST_RUN_REQUESTS : rate * seconds));
      const missing = amount - (pool.length - next);
      if (missing > 0) {
        for (const token of await (seed ? seed(missing) : seedGrants(db, owner, missing))) pool.push(token);
        stats.seeded += missing;
      }
      runStart = performance.now();
      return {
        amount,
        requests: [
          {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            setupRequest: (req) => {
              const token = pool[next];
              if (token === undefined) throw new Error(`${name}: refresh token pool exhausted`);
              pool[next++] = undefined;
              stats.handedOut++;
              const form = new URLSearchParams({
                grant_type: "refresh_token",
                client_id: clientId,
                refresh_token: token,
              });
              return { ...req, body: form.toString() };
            },
            onResponse: (status, body) => {
              lastResponse = performance.now();
              if (status !== 200) {
                stats.notOk++;
                stats.firstError ??= `${status} ${body.slice(0, 300)}`;
                return;
              }
              stats.ok++;
              try {
                const b = JSON.parse(body);
                if (!isTokenResponse(b)) stats.badBodies++;
                stats.issued.add(b.refresh_token);
              } catch {
                stats.badBodies++;
              }
            },
          },
        ],
      };
    },
    after(result) {
      const duration = (lastResponse - runStart) / 1000;
      rate = result.requests.total / duration;
      return { ...result, duration };
    },
  };
  return target;
}

/**
 * What D1 says after the runs: rotated refresh tokens (each names its successor), access
 * tokens issued, grants revoked (a presented-again token revokes its family) and grants
 * whose number of live refresh tokens is not exactly one.
 */
export async function rotationState(db, clientId) {
  const one = (sql) => db.prepare(sql).bind(clientId).first();
  const [rotated, access, revoked, broken] = await Promise.all([
    one(`SELECT count(*) AS n FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
         WHERE g.client_id = ?1 AND t.kind = 'refresh' AND t.replaced_by IS NOT NULL`),
    one(
      `SELECT count(*) AS n FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE g.client_id = ?1 AND t.kind = 'access'`,
    ),
    one(`SELECT count(*) AS n FROM oauth_grants WHERE client_id = ?1 AND revoked_at IS NOT NULL`),
    one(`SELECT count(*) AS n FROM oauth_grants g WHERE g.client_id = ?1 AND
           (SELECT count(*) FROM oauth_tokens t WHERE t.grant_id = g.id AND t.kind = 'refresh' AND t.revoked_at IS NULL) <> 1`),
  ]);
  return { rotated: rotated.n, access: access.n, revoked: revoked.n, broken: broken.n };
}

/**
 * Checks a target's counts, and against D1 when `state` is given (not for the peer, which
 * keeps its grants in KV); returns the list of problems (empty when sound).
 */
export function refreshProblems(target, state) {
  const s = target.stats;
  const problems = [];
  if (s.notOk > 0) problems.push(`${target.name}: ${s.notOk} refresh answers were not 200 (first: ${s.firstError})`);
  if (s.badBodies > 0) problems.push(`${target.name}: ${s.badBodies} 200 bodies were not a token response`);
  if (s.ok !== s.handedOut) problems.push(`${target.name}: ${s.handedOut} tokens handed out, ${s.ok} answered 200`);
  if (s.issued.size !== s.ok)
    problems.push(`${target.name}: ${s.ok} 200s but ${s.issued.size} distinct new refresh tokens`);
  if (!state) return problems;
  if (state.rotated !== s.ok)
    problems.push(`${target.name}: ${s.ok} 200s but ${state.rotated} rotated refresh tokens in D1`);
  if (state.access !== s.ok) problems.push(`${target.name}: ${s.ok} 200s but ${state.access} access tokens in D1`);
  if (state.revoked !== 0)
    problems.push(`${target.name}: ${state.revoked} grants revoked (a token was presented twice)`);
  if (state.broken !== 0)
    problems.push(`${target.name}: ${state.broken} grants without exactly one live refresh token`);
  return problems;
}

/** A token response of the peer (`bench/baselines/oauth-provider-worker.mjs`): its own shape and scopes. */
export const peerTokenResponse = (b) =>
  b.token_type?.toLowerCase() === "bearer" &&
  b.expires_in === 3600 &&
  b.scope === SCOPE_STRING &&
  typeof b.access_token === "string" &&
  typeof b.refresh_token === "string";

/** A public client of the peer, and a `seed(count)` that makes its grants through the peer itself. */
export async function peerClient(peerUrl) {
  const res = await fetch(new URL("/client", peerUrl), { method: "POST" });
  if (!res.ok) throw new Error(`peer client: ${res.status} ${await res.text()}`);
  const { client_id: clientId } = await res.json();
  const seed = async (count) => {
    const tokens = [];
    // Requests of at most 200 grants: one request's subrequests (KV operations) are capped.
    for (let done = 0; done < count; done += 200) {
      const n = Math.min(200, count - done);
      const r = await fetch(new URL(`/seed?${new URLSearchParams({ client_id: clientId, count: n })}`, peerUrl), {
        method: "POST",
      });
      if (!r.ok) throw new Error(`peer seed: ${r.status} ${await r.text()}`);
      tokens.push(...(await r.json()).tokens);
    }
    return tokens;
  };
  return { clientId, seed };
}
