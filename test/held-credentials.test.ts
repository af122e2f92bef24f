import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type HeldCredential, stillLive } from "../src/auth/held";
import { hashToken } from "../src/platform/crypto";
import { countingD1 } from "./support/d1-count";
import { registerClient, signIn, tokensFor } from "./support/oauth";
import { signupWorkspace } from "./support/seed";

// A live socket keeps the credential it was opened with and has it checked again while it stays
// open (src/conversations/room/live-sockets.ts): the check must refuse what a request refuses.

const idOf = async (table: "api_tokens" | "sessions" | "oauth_tokens", token: string) =>
  (await env.DB.prepare(`SELECT id FROM ${table} WHERE token_hash = ?1`)
    .bind(hashToken(token))
    .first<{ id: string }>())!.id;

const set = (sql: string, ...values: unknown[]) =>
  env.DB.prepare(sql)
    .bind(...values)
    .run();

/** One credential of each kind, of one user. */
async function heldCredentials() {
  const ws = await signupWorkspace();
  const client = await registerClient(ws.adminToken, { scope: "conversations:read" });
  const session = await signIn(ws.email);
  const oauth = await tokensFor(session, client, "conversations:read");
  const held: HeldCredential[] = [
    { kind: "pat", id: await idOf("api_tokens", ws.adminToken) },
    { kind: "session", id: await idOf("sessions", session) },
    { kind: "oauth", id: await idOf("oauth_tokens", oauth.access_token) },
  ];
  return { ws, client, held };
}

describe("stillLive: a held credential, checked again", () => {
  it("holds for a token, a session and an OAuth access token while nothing changed, in one round trip", async () => {
    const { held } = await heldCredentials();
    const d1 = countingD1();
    expect(await stillLive(d1.env, held)).toEqual([true, true, true]);
    expect(d1.take()).toBe(1);
    expect(await stillLive(d1.env, [])).toEqual([]);
    expect(d1.take()).toBe(0);
  });

  it("fails each once it is revoked, and only that one", async () => {
    const { held } = await heldCredentials();
    const [pat, session, oauth] = held;
    const now = new Date().toISOString();
    await set("UPDATE api_tokens SET revoked_at = ?1 WHERE id = ?2", now, pat!.id);
    expect(await stillLive(env, held)).toEqual([false, true, true]);
    await set("UPDATE sessions SET revoked_at = ?1 WHERE id = ?2", now, session!.id);
    expect(await stillLive(env, held)).toEqual([false, false, true]);
    await set("UPDATE oauth_tokens SET revoked_at = ?1 WHERE id = ?2", now, oauth!.id);
    expect(await stillLive(env, held)).toEqual([false, false, false]);
  });

  it("fails each once it has expired", async () => {
    const { held } = await heldCredentials();
    const [pat, session, oauth] = held;
    const past = new Date(Date.now() - 1_000).toISOString();
    await set("UPDATE api_tokens SET expires_at = ?1 WHERE id = ?2", past, pat!.id);
    await set("UPDATE sessions SET expires_at = ?1 WHERE id = ?2", past, session!.id);
    await set("UPDATE oauth_tokens SET expires_at = ?1 WHERE id = ?2", past, oauth!.id);
    expect(await stillLive(env, held)).toEqual([false, false, false]);
  });

  it("fails them all once their user is erased; an OAuth token also with its grant revoked or its client disabled", async () => {
    const { ws, client, held } = await heldCredentials();
    const oauth = held[2]!;
    const now = new Date().toISOString();
    await set("UPDATE oauth_clients SET disabled_at = ?1 WHERE client_id = ?2", now, client.client_id);
    expect(await stillLive(env, held)).toEqual([true, true, false]);
    await set("UPDATE oauth_clients SET disabled_at = NULL WHERE client_id = ?1", client.client_id);
    await set(
      "UPDATE oauth_grants SET revoked_at = ?1 WHERE id = (SELECT grant_id FROM oauth_tokens WHERE id = ?2)",
      now,
      oauth.id,
    );
    expect(await stillLive(env, held)).toEqual([true, true, false]);
    await set("UPDATE users SET erased_at = ?1 WHERE id = ?2", now, ws.user.id);
    expect(await stillLive(env, held)).toEqual([false, false, false]);
  });
});
