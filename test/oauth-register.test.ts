import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import grantTypesMigration from "../migrations/0016_oauth_client_grant_types.sql?raw";
import { ClientInfoSchema, TokenResponseSchema } from "../src/oauth/schemas";
import { hashToken } from "../src/platform/crypto";
import { call, parse } from "./support/api";
import {
  auditEvents,
  expectOAuthError,
  oauthPost,
  REDIRECT,
  registerClient,
  sessionCookie,
  signIn,
  tokensFor,
} from "./support/oauth";
import { addUser, signupWorkspace } from "./support/seed";

const register = (token: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
  call("POST", "/v1/oauth/register", { token, body, headers });

const clientRow = (clientId: string) =>
  env.DB.prepare("SELECT * FROM oauth_clients WHERE client_id = ?").bind(clientId).first<Record<string, unknown>>();

describe("POST /v1/oauth/register", () => {
  it("registers a public client with the spec's defaults and stores only hashes", async () => {
    const ws = await signupWorkspace();
    const before = Math.floor(Date.now() / 1000);
    const res = await register(ws.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read" });
    expect(res.status).toBe(201);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const info = await parse(res, ClientInfoSchema.strict());
    expect(info.client_id).toMatch(/^svc_client_[0-9a-f]{32}$/);
    expect(info.client_name).toBe("Unnamed app");
    expect(info.token_endpoint_auth_method).toBe("none");
    // Asked for the default, registered as what the client will get: a refresh token with every code.
    expect(info.grant_types).toEqual(["authorization_code", "refresh_token"]);
    expect(info.response_types).toEqual(["code"]);
    expect(info.scope).toBe("agents:read");
    expect(info.redirect_uris).toEqual([REDIRECT]);
    expect(info.client_secret).toBeUndefined();
    expect(info.client_secret_expires_at).toBeUndefined();
    expect(info.registration_access_token).toMatch(/^svc_ratk_[A-Za-z0-9_-]{43}$/);
    expect(info.registration_client_uri).toBe(`https://svc.test/v1/oauth/register/${info.client_id}`);
    expect(info.client_id_issued_at).toBeGreaterThanOrEqual(before);
    expect(info.client_id_issued_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));

    const row = await clientRow(info.client_id);
    expect(row).toMatchObject({
      workspace_id: ws.workspace.id,
      created_by: ws.user.id,
      first_party: 0,
      secret_hash: null,
      registration_token_hash: hashToken(info.registration_access_token!),
      disabled_at: null,
    });
    expect(JSON.stringify(row)).not.toContain(info.registration_access_token!);

    const [event] = await auditEvents(ws.workspace.id, "oauth.client.register");
    expect(event).toMatchObject({ target: `oauth_client:${info.client_id}`, intent: "register", outcome: "success" });
    expect(event!.details).toEqual({
      client_id: info.client_id,
      client_name: "Unnamed app",
      redirect_uris: [REDIRECT],
      scope: "agents:read",
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
    });
  });

  // RFC 7591 §3.2.1: the server "MAY reject or replace any of the client's requested metadata
  // values" and answers "the registered metadata"; every client receives rotating refresh
  // tokens, so every client's registered grant types name refresh_token.
  it("registers and answers the grant types the client really gets, whatever valid grant_types it asked for", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    for (const grantTypes of [undefined, ["authorization_code"], ["refresh_token", "authorization_code"]]) {
      const res = await register(ws.adminToken, {
        redirect_uris: [REDIRECT],
        scope: "agents:read",
        client_name: "Grants",
        ...(grantTypes ? { grant_types: grantTypes } : {}),
      });
      expect(res.status).toBe(201);
      const info = await parse(res, ClientInfoSchema.strict());
      expect(info.grant_types, JSON.stringify(grantTypes)).toEqual(["authorization_code", "refresh_token"]);
      expect(JSON.parse((await clientRow(info.client_id))?.grant_types as string)).toEqual([
        "authorization_code",
        "refresh_token",
      ]);
      const read = await call("GET", `/v1/oauth/register/${info.client_id}`, { token: info.registration_access_token });
      expect((await parse(read, ClientInfoSchema)).grant_types).toEqual(["authorization_code", "refresh_token"]);

      // And it does get a refresh token, which works.
      const tokens = await tokensFor(session, info);
      const refreshed = await oauthPost("/v1/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: info.client_id,
      });
      await parse(refreshed, TokenResponseSchema);
    }
  });

  it("brings clients stored with authorization_code alone in line (migration 0016)", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    await env.DB.prepare(`UPDATE oauth_clients SET grant_types = '["authorization_code"]' WHERE client_id = ?`)
      .bind(client.client_id)
      .run();
    await env.DB.exec(
      grantTypesMigration
        .replace(/^--.*$/gm, "")
        .replace(/\s+/g, " ")
        .trim(),
    );
    expect((await clientRow(client.client_id))?.grant_types).toBe('["authorization_code","refresh_token"]');
    const cli = await clientRow("svc_client_cli");
    expect(cli?.grant_types).toBe('["authorization_code","refresh_token"]');
  });

  it("gives a confidential client a secret shown once, never expiring, stored as a hash", async () => {
    const ws = await signupWorkspace();
    for (const method of ["client_secret_post", "client_secret_basic"] as const) {
      const res = await register(ws.adminToken, {
        redirect_uris: [REDIRECT, REDIRECT],
        scope: "agents:read  conversations:read",
        client_name: "  Backend  ",
        token_endpoint_auth_method: method,
        grant_types: ["authorization_code", "refresh_token"],
      });
      const info = await parse(res, ClientInfoSchema.strict());
      expect(res.status).toBe(201);
      expect(info.client_secret).toMatch(/^svc_csec_[A-Za-z0-9_-]{43}$/);
      expect(info.client_secret_expires_at).toBe(0);
      expect(info.token_endpoint_auth_method).toBe(method);
      expect(info.client_name).toBe("Backend");
      expect(info.redirect_uris).toEqual([REDIRECT]);
      expect(info.scope).toBe("agents:read conversations:read");
      expect(info.grant_types).toEqual(["authorization_code", "refresh_token"]);
      const row = await clientRow(info.client_id);
      expect(row?.secret_hash).toBe(hashToken(info.client_secret!));
      expect(JSON.stringify(row)).not.toContain(info.client_secret!);
    }
  });

  it("uses the default name for a blank client_name and ignores first_party and unknown metadata", async () => {
    const ws = await signupWorkspace();
    const res = await register(ws.adminToken, {
      redirect_uris: [REDIRECT],
      scope: "agents:read",
      client_name: "   ",
      first_party: true,
      logo_uri: "https://x.example/l.png",
    });
    const info = await parse(res, ClientInfoSchema.strict());
    expect(info.client_name).toBe("Unnamed app");
    expect((await clientRow(info.client_id))?.first_party).toBe(0);
  });

  it("accepts loopback http redirect URIs and https ones with a query", async () => {
    const ws = await signupWorkspace();
    const uris = [
      "http://127.0.0.1/cb",
      "http://localhost:8080/cb",
      "http://[::1]:9000/cb",
      "https://app.example/cb?tenant=a",
    ];
    const info = await registerClient(ws.adminToken, { redirect_uris: uris });
    expect(info.redirect_uris).toEqual(uris);
  });

  it("accepts a browser session of the account", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const res = await register(undefined, { redirect_uris: [REDIRECT], scope: "agents:read" }, sessionCookie(session));
    expect(res.status).toBe(201);
    const info = await parse(res, ClientInfoSchema);
    expect((await clientRow(info.client_id))?.workspace_id).toBe(ws.workspace.id);
  });

  it("lets a member register for their workspace", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const info = await registerClient(member.token);
    expect((await clientRow(info.client_id))?.created_by).toBe(member.user.id);
  });

  it("is 401 in the OAuth shape without valid credentials", async () => {
    const none = await register(undefined, { redirect_uris: [REDIRECT], scope: "agents:read" });
    await expectOAuthError(none, 401, "invalid_token");
    expect(none.headers.get("WWW-Authenticate")).toContain(
      'resource_metadata="https://svc.test/.well-known/oauth-protected-resource"',
    );
    await expectOAuthError(
      await register("svc_pat_nope", { redirect_uris: [REDIRECT], scope: "agents:read" }),
      401,
      "invalid_token",
    );
  });

  const badRedirects: [string, unknown][] = [
    ["missing", undefined],
    ["empty", []],
    ["not an array", REDIRECT],
    ["not strings", [42]],
    ["relative", ["/callback"]],
    ["http on a public host", ["http://app.example/callback"]],
    ["a fragment", ["https://app.example/callback#x"]],
    ["an empty fragment", ["https://app.example/callback#"]],
    ["a custom scheme", ["com.example.app:/callback"]],
    ["javascript", ["javascript:alert(1)"]],
    ["credentials", ["https://user:pw@app.example/cb"]],
    ["too long", [`https://app.example/${"a".repeat(2000)}`]],
    ["one bad among good", [REDIRECT, "ftp://app.example/cb"]],
    // URL parsers drop or rewrite these silently, so the registered text would not be the URI used.
    ["with a NUL", [`${REDIRECT}\u0000`]],
    ["with a line break", [`${REDIRECT}\n`]],
    ["with a tab inside", ["https://app.exa\tmple/callback"]],
    ["with leading space", [` ${REDIRECT}`]],
    ["with a backslash", ["https://app.example\\callback"]],
  ];
  for (const [name, uris] of badRedirects) {
    it(`refuses redirect_uris that are ${name} (invalid_redirect_uri)`, async () => {
      const ws = await signupWorkspace();
      const res = await register(ws.adminToken, { redirect_uris: uris, scope: "agents:read" });
      await expectOAuthError(res, 400, "invalid_redirect_uri");
    });
  }

  const badMetadata: [string, Record<string, unknown>][] = [
    ["no scope", { scope: undefined }],
    ["an empty scope", { scope: "  " }],
    ["an unknown scope", { scope: "agents:read root" }],
    ["a non-string scope", { scope: ["agents:read"] }],
    ["an unknown auth method", { token_endpoint_auth_method: "private_key_jwt" }],
    ["the implicit grant", { grant_types: ["implicit"] }],
    ["client_credentials", { grant_types: ["authorization_code", "client_credentials"] }],
    ["refresh_token without authorization_code", { grant_types: ["refresh_token"] }],
    ["a grant_types that is not an array", { grant_types: "authorization_code" }],
    ["empty grant_types", { grant_types: [] }],
    ["response type token", { response_types: ["token"] }],
    ["response types code and token", { response_types: ["code", "token"] }],
    ["a client_name that is too long", { client_name: "x".repeat(201) }],
    ["a numeric client_name", { client_name: 7 }],
  ];
  for (const [name, extra] of badMetadata) {
    it(`refuses ${name} (invalid_client_metadata)`, async () => {
      const ws = await signupWorkspace();
      const res = await register(ws.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read", ...extra });
      await expectOAuthError(res, 400, "invalid_client_metadata");
    });
  }

  it("takes JSON only", async () => {
    const ws = await signupWorkspace();
    const form = await call("POST", "/v1/oauth/register", {
      token: ws.adminToken,
      rawBody: new URLSearchParams({ redirect_uris: REDIRECT, scope: "agents:read" }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    await expectOAuthError(form, 400, "invalid_client_metadata");
    const malformed = await call("POST", "/v1/oauth/register", {
      token: ws.adminToken,
      rawBody: "{nope",
      headers: { "Content-Type": "application/json" },
    });
    await expectOAuthError(malformed, 400, "invalid_client_metadata");
    const array = await register(ws.adminToken, [REDIRECT]);
    await expectOAuthError(array, 400, "invalid_client_metadata");
  });

  it("caps an account at 50 active clients, atomically, and frees a place when one is deleted", async () => {
    const ws = await signupWorkspace();
    const attempts = await Promise.all(
      Array.from({ length: 53 }, () => register(ws.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read" })),
    );
    const created = attempts.filter((r) => r.status === 201);
    const refused = attempts.filter((r) => r.status !== 201);
    expect(created).toHaveLength(50);
    expect(refused).toHaveLength(3);
    for (const r of refused) await expectOAuthError(r, 400, "client_limit_reached");
    const count = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM oauth_clients WHERE workspace_id = ? AND disabled_at IS NULL",
    )
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    expect(count?.n).toBe(50);

    // Another workspace is not affected by this one's cap.
    const other = await signupWorkspace();
    expect((await register(other.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read" })).status).toBe(201);

    const first = await parse(created[0]!, ClientInfoSchema);
    const del = await call("DELETE", `/v1/oauth/register/${first.client_id}`, {
      token: first.registration_access_token,
    });
    expect(del.status).toBe(204);
    expect((await register(ws.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read" })).status).toBe(201);
    await expectOAuthError(
      await register(ws.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read" }),
      400,
      "client_limit_reached",
    );
  });
});

describe("client management with the registration access token", () => {
  const manage = (
    method: string,
    client: { client_id: string },
    token?: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => call(method, `/v1/oauth/register/${client.client_id}`, { token, body, headers });

  it("reads the client without its secret or registration token", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { token_endpoint_auth_method: "client_secret_post" });
    const res = await manage("GET", client, client.registration_access_token);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const info = await parse(res, ClientInfoSchema.strict());
    expect(info.client_secret).toBeUndefined();
    expect(info.registration_access_token).toBeUndefined();
    const { client_secret: _s, registration_access_token: _r, ...rest } = client;
    expect(info).toEqual(rest);
  });

  it("refuses a session, a PAT, a wrong token and no token with 401", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    const session = await signIn(ws.email);
    for (const res of [
      await manage("GET", client, ws.adminToken),
      await manage("GET", client, undefined, undefined, sessionCookie(session)),
      await manage("GET", client, "svc_ratk_" + "A".repeat(43)),
      await manage("GET", client),
      await manage("PUT", client, ws.adminToken, { redirect_uris: [REDIRECT], scope: "agents:read" }),
      await manage("DELETE", client, ws.adminToken),
    ]) {
      await expectOAuthError(res, 401, "invalid_token");
      expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
    }
    expect((await clientRow(client.client_id))?.disabled_at).toBeNull();
  });

  it("refuses an update or delete with a missing, wrong or spent registration token with 401, changing nothing", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    const other = await registerClient(ws.adminToken);
    const body = { redirect_uris: ["https://new.example/cb"], scope: "agents:read" };
    expect((await manage("DELETE", other, other.registration_access_token)).status).toBe(204);
    for (const token of [undefined, "svc_ratk_" + "A".repeat(43), "not-a-token", other.registration_access_token]) {
      for (const method of ["PUT", "DELETE"]) {
        const res = await manage(method, client, token, method === "PUT" ? body : undefined);
        await expectOAuthError(res, 401, "invalid_token");
        expect(res.headers.get("Cache-Control")).toBe("no-store");
        expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
      }
    }
    const row = await clientRow(client.client_id);
    expect(row).toMatchObject({ name: "Test App", redirect_uris: JSON.stringify([REDIRECT]), disabled_at: null });
  });

  it("is 404 when the token belongs to another client or the client does not exist", async () => {
    const ws = await signupWorkspace();
    const a = await registerClient(ws.adminToken);
    const b = await registerClient(ws.adminToken);
    await expectOAuthError(await manage("GET", b, a.registration_access_token), 404, "not_found");
    await expectOAuthError(await manage("DELETE", b, a.registration_access_token), 404, "not_found");
    await expectOAuthError(
      await manage("GET", { client_id: "svc_client_missing" }, a.registration_access_token),
      404,
      "not_found",
    );
    expect((await clientRow(b.client_id))?.disabled_at).toBeNull();
  });

  it("replaces name, redirect URIs and scope, re-validated, and audits it", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, {
      token_endpoint_auth_method: "client_secret_basic",
      grant_types: ["authorization_code", "refresh_token"],
    });
    const res = await manage("PUT", client, client.registration_access_token, {
      client_id: client.client_id,
      redirect_uris: ["https://new.example/cb"],
      scope: "agents:read memory:read",
      client_name: "Renamed",
      token_endpoint_auth_method: "client_secret_basic",
      grant_types: ["refresh_token", "authorization_code"],
      response_types: ["code"],
      client_secret: client.client_secret,
    });
    expect(res.status).toBe(200);
    const info = await parse(res, ClientInfoSchema.strict());
    expect(info).toMatchObject({
      client_name: "Renamed",
      redirect_uris: ["https://new.example/cb"],
      scope: "agents:read memory:read",
      token_endpoint_auth_method: "client_secret_basic",
    });
    expect(info.client_secret).toBeUndefined();
    const row = await clientRow(client.client_id);
    expect(row?.secret_hash).toBe(hashToken(client.client_secret!));
    const read = await parse(await manage("GET", client, client.registration_access_token), ClientInfoSchema);
    expect(read.client_name).toBe("Renamed");

    const [event] = await auditEvents(ws.workspace.id, "oauth.client.update");
    expect(event).toMatchObject({
      actor_kind: "oauth_client",
      actor_id: client.client_id,
      target: `oauth_client:${client.client_id}`,
    });
    expect(event!.details).toMatchObject({ client_name: "Renamed", scope: "agents:read memory:read" });

    // Omitting client_name resets it to the default, like registration.
    const reset = await parse(
      await manage("PUT", client, client.registration_access_token, {
        redirect_uris: [REDIRECT],
        scope: "agents:read",
      }),
      ClientInfoSchema,
    );
    expect(reset.client_name).toBe("Unnamed app");
  });

  const badUpdates: [string, Record<string, unknown>, string][] = [
    ["an http redirect URI", { redirect_uris: ["http://app.example/cb"] }, "invalid_redirect_uri"],
    ["no redirect URIs", { redirect_uris: [] }, "invalid_redirect_uri"],
    ["an unknown scope", { scope: "everything" }, "invalid_client_metadata"],
    ["no scope", { scope: undefined }, "invalid_client_metadata"],
    ["a change of auth method", { token_endpoint_auth_method: "none" }, "invalid_client_metadata"],
    ["a new secret", { client_secret: "svc_csec_mine" }, "invalid_client_metadata"],
    ["another client_id", { client_id: "svc_client_other" }, "invalid_client_metadata"],
    ["an unsupported grant type", { grant_types: ["authorization_code", "implicit"] }, "invalid_client_metadata"],
    ["refresh_token without authorization_code", { grant_types: ["refresh_token"] }, "invalid_client_metadata"],
    ["other response types", { response_types: ["token"] }, "invalid_client_metadata"],
  ];
  for (const [name, change, error] of badUpdates) {
    it(`refuses an update with ${name}`, async () => {
      const ws = await signupWorkspace();
      const client = await registerClient(ws.adminToken, {
        token_endpoint_auth_method: "client_secret_post",
        grant_types: ["authorization_code", "refresh_token"],
      });
      const res = await manage("PUT", client, client.registration_access_token, {
        redirect_uris: [REDIRECT],
        scope: "agents:read",
        client_name: "X",
        ...change,
      });
      await expectOAuthError(res, 400, error);
      const row = await clientRow(client.client_id);
      expect(row?.name).toBe("Test App");
      expect(row?.auth_method).toBe("client_secret_post");
    });
  }

  it("judges grant_types on update as at registration, and still answers the grant types the client gets", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    for (const grantTypes of [["authorization_code"], ["authorization_code", "refresh_token"]]) {
      const res = await manage("PUT", client, client.registration_access_token, {
        redirect_uris: [REDIRECT],
        scope: "agents:read",
        grant_types: grantTypes,
      });
      expect(res.status).toBe(200);
      expect((await parse(res, ClientInfoSchema.strict())).grant_types).toEqual([
        "authorization_code",
        "refresh_token",
      ]);
    }
    expect(JSON.parse((await clientRow(client.client_id))?.grant_types as string)).toEqual([
      "authorization_code",
      "refresh_token",
    ]);
  });

  it("takes JSON only on update", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    const res = await call("PUT", `/v1/oauth/register/${client.client_id}`, {
      token: client.registration_access_token,
      rawBody: "scope=agents:read",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    await expectOAuthError(res, 400, "invalid_client_metadata");
  });

  it("soft-deletes with 204: the token stops working, the row stays, and it is audited", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    const res = await manage("DELETE", client, client.registration_access_token);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect((await clientRow(client.client_id))?.disabled_at).toBeTruthy();
    await expectOAuthError(await manage("GET", client, client.registration_access_token), 401, "invalid_token");
    await expectOAuthError(await manage("DELETE", client, client.registration_access_token), 401, "invalid_token");
    const [event] = await auditEvents(ws.workspace.id, "oauth.client.delete");
    expect(event).toMatchObject({
      target: `oauth_client:${client.client_id}`,
      intent: "delete",
      details: { client_id: client.client_id, revoked_grants: 0 },
    });
  });
});
