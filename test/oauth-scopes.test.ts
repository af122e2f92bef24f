import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { effectiveScopes, effectiveScopesSql, ROLES, SCOPES } from "../src/auth/scopes";
import { db } from "../src/platform/db";
import { call, expectProblem } from "./support/api";
import { auditEvents } from "./support/audit";
import {
  authorizePath,
  exchange,
  expectOAuthError,
  me,
  newPkce,
  oauthPost,
  obtainCode,
  postConsent,
  REDIRECT,
  registerClient,
  sessionCookie,
  signIn,
  tokensFor,
} from "./support/oauth";
import { addUser, signupWorkspace } from "./support/seed";

/**
 * `svc:computer` never leaves the local-browser route (it widens one ask turn and nothing
 * else), and `admin` goes over OAuth only while the user is an admin.
 */

const scopesOf = async (token: string) => ((await (await me(token)).json()) as { scopes: string[] }).scopes;

/** Gives a client (or a grant) scopes the API no longer hands out, as rows made before the rule would hold. */
async function setClientScopes(clientId: string, scopes: string[]) {
  await env.DB.prepare("UPDATE oauth_clients SET scopes = ?1 WHERE client_id = ?2")
    .bind(JSON.stringify(scopes), clientId)
    .run();
}

const authorize = (session: string, clientId: string, scope: string) =>
  call(
    "GET",
    authorizePath({
      client_id: clientId,
      redirect_uri: clientId === "svc_client_cli" ? "http://127.0.0.1:5000/callback" : REDIRECT,
      response_type: "code",
      code_challenge: newPkce().challenge,
      code_challenge_method: "S256",
      scope,
      state: "s1",
    }),
    { headers: sessionCookie(session) },
  );

describe("svc:computer over OAuth", () => {
  it("is listed in no metadata document", async () => {
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource"]) {
      const metadata = (await (await call("GET", path)).json()) as { scopes_supported: string[] };
      expect(metadata.scopes_supported, path).toContain("agents:read");
      expect(metadata.scopes_supported, path).not.toContain("svc:computer");
    }
  });

  it("is never granted to a client that asks for every scope the metadata lists (as the MCP SDK does)", async () => {
    const ws = await signupWorkspace();
    const metadata = (await (await call("GET", "/.well-known/oauth-protected-resource")).json()) as {
      scopes_supported: string[];
    };
    const everything = metadata.scopes_supported.join(" ");
    const client = await registerClient(ws.adminToken, { scope: everything });
    const tokens = await tokensFor(await signIn(ws.email), client, everything);
    expect(tokens.scope.split(" ")).toContain("admin");
    expect(tokens.scope.split(" ")).not.toContain("svc:computer");
    expect(await scopesOf(tokens.access_token)).not.toContain("svc:computer");
  });

  it("is dropped from a registration that names it beside other scopes, and refused alone", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "agents:read svc:computer" });
    expect(client.scope).toBe("agents:read");
    const alone = await call("POST", "/v1/oauth/register", {
      token: ws.adminToken,
      body: { redirect_uris: [REDIRECT], scope: "svc:computer" },
    });
    expect(alone.status).toBe(400);
    expect(((await alone.json()) as { error: string }).error).toBe("invalid_client_metadata");
  });

  it("is never granted through authorize, even to a client allowed it or a first-party client: dropped from a mixed request, invalid_scope alone", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const client = await registerClient(ws.adminToken, { scope: "agents:read" });
    await setClientScopes(client.client_id, ["agents:read", "svc:computer"]);
    for (const clientId of [client.client_id, "svc_client_cli"]) {
      const alone = await authorize(session, clientId, "svc:computer");
      expect(alone.headers.get("Location"), clientId).toBeNull();
      await expectOAuthError(alone, 400, "invalid_scope");
    }
    const tokens = await tokensFor(session, client, "agents:read svc:computer");
    expect(tokens.scope).toBe("agents:read");
    // Asking for nothing names the client's scopes, still without svc:computer.
    expect((await tokensFor(session, client)).scope).toBe("agents:read");

    const { verifier, challenge } = newPkce();
    const redirectUri = "http://127.0.0.1:5000/callback";
    const { code } = await obtainCode(
      session,
      { client_id: "svc_client_cli" },
      {
        challenge,
        redirectUri,
        scope: "agents:read svc:computer",
      },
    );
    const cli = (await (await exchange({ client_id: "svc_client_cli" }, code, verifier, redirectUri)).json()) as {
      scope: string;
    };
    expect(cli.scope).toBe("agents:read");
  });

  it("is never granted by a refresh, nor carried by the access token, even when a grant made before the rule holds it", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "agents:read" });
    await setClientScopes(client.client_id, ["agents:read", "svc:computer"]);
    const first = await tokensFor(await signIn(ws.email), client);
    await env.DB.prepare("UPDATE oauth_grants SET scopes = ?1 WHERE client_id = ?2")
      .bind(JSON.stringify(["agents:read", "svc:computer"]), client.client_id)
      .run();
    expect(await scopesOf(first.access_token)).toEqual(["agents:read"]);
    const refreshed = (await (
      await oauthPost("/v1/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: first.refresh_token,
        client_id: client.client_id,
      })
    ).json()) as { scope: string; access_token: string };
    expect(refreshed.scope).toBe("agents:read");
    expect(await scopesOf(refreshed.access_token)).toEqual(["agents:read"]);
  });

  it("is never put on a personal access token created through the API", async () => {
    const ws = await signupWorkspace();
    expect(await scopesOf(ws.adminToken)).not.toContain("svc:computer");
    await expectProblem(
      await call("POST", "/v1/api/admin/tokens", {
        token: ws.adminToken,
        body: { name: "computer", scopes: ["agents:read", "svc:computer"] },
      }),
      400,
    );
  });
});

describe("admin over OAuth", () => {
  it("is granted only while the user is an admin: never to a member, and no longer after a demotion", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "admin agents:read" });
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    // A member asking for admin alone is refused before any consent page (`invalid_scope` | authorize (400)).
    const refused = await authorize(await signIn(member.email), client.client_id, "admin");
    expect(refused.headers.get("Location")).toBeNull();
    await expectOAuthError(refused, 400, "invalid_scope");

    const admin = await addUser(ws.adminToken, "admin", ["admin", "agents:read"]);
    const tokens = await tokensFor(await signIn(admin.email), client, "admin agents:read");
    expect(tokens.scope).toBe("admin agents:read");
    await env.DB.prepare("UPDATE users SET role = 'member' WHERE id = ?1").bind(admin.user.id).run();
    expect(await scopesOf(tokens.access_token)).toEqual(["agents:read"]);
    const refreshed = (await (
      await oauthPost("/v1/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: client.client_id,
      })
    ).json()) as { scope: string };
    expect(refreshed.scope).toBe("agents:read");
    // The events say what the responses said: the same rule, filled in SQL inside the batch.
    const [issued] = await auditEvents(ws.workspace.id, "oauth.token.issue");
    const [rotated] = await auditEvents(ws.workspace.id, "oauth.token.refresh");
    expect([issued?.details.scope, rotated?.details.scope]).toEqual(["admin agents:read", "agents:read"]);
  });

  it("refuses an approval with invalid_scope (400, no redirect) when the user lost the role since the consent page", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "admin agents:read" });
    const admin = await addUser(ws.adminToken, "admin", ["admin", "agents:read"]);
    const session = await signIn(admin.email);
    const consent = await authorize(session, client.client_id, "admin");
    expect(consent.status).toBe(200);
    await env.DB.prepare("UPDATE users SET role = 'member' WHERE id = ?1").bind(admin.user.id).run();
    const approved = await postConsent(session, await consent.text(), "approve");
    expect(approved.headers.get("Location")).toBeNull();
    await expectOAuthError(approved, 400, "invalid_scope");
    const codes = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_codes WHERE user_id = ?1")
      .bind(admin.user.id)
      .first<{ n: number }>();
    expect(codes?.n).toBe(0);
  });

  it("the consent page says in plain words what admin allows", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "admin" });
    const res = await call(
      "GET",
      authorizePath({
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        response_type: "code",
        code_challenge: newPkce().challenge,
        code_challenge_method: "S256",
        scope: "admin",
      }),
      { headers: sessionCookie(await signIn(ws.email)) },
    );
    const html = await res.text();
    expect(html).toContain("Act as a workspace admin for you, for as long as you are one");
    expect(html).toMatch(/erase users/);
    expect(html).toMatch(/issue and revoke their access tokens/);
  });
});

describe("the scope rule, written once", () => {
  // "The user's role is the runtime ceiling, so a token never exceeds its user."
  it("the SQL a batch fills an event's scope with answers what effectiveScopes answers", async () => {
    const lists = [
      [...SCOPES],
      ["admin", "agents:read"],
      ["memory:write", "svc:computer", "admin", "agents:read"],
      ["svc:computer"],
      ["not-a-scope", "billing:read"],
      [],
    ];
    for (const role of ROLES)
      for (const list of lists) {
        const row = await db(env).get<{ scope: string | null }>(
          sql`SELECT ${effectiveScopesSql(sql`${JSON.stringify(list)}`, sql`${role}`)} AS scope`,
        );
        expect(row.scope ?? "", `${role} ${list.join(" ")}`).toBe([...effectiveScopes(list, role)].join(" "));
      }
  });
});
