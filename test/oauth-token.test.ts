import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import { runEraseSteps } from "../src/admin/erase-service";
import { deliverNow } from "../src/audit/delivery";
import { pendingCount } from "../src/audit/outbox";
import { oauthArea } from "../src/oauth";
import { IntrospectionSchema, TokenResponseSchema } from "../src/oauth/schemas";
import { pkceChallenge } from "../src/oauth/token-pairs";
import { hashToken } from "../src/platform/crypto";
import { call, parse } from "./support/api";
import { callWith } from "./support/app";
import { eventually } from "./support/browser";
import { fetchWithDb, watchedDb } from "./support/d1";
import {
  auditEvents,
  exchange,
  expectOAuthError,
  me,
  newPkce,
  oauthPost,
  obtainCode,
  REDIRECT,
  registerClient,
  signIn,
  type TokenCallOpts,
  tokensFor,
} from "./support/oauth";
import { addUser, signupWorkspace } from "./support/seed";

type Client = { client_id: string; client_secret?: string; registration_access_token?: string };

async function setup(metadata: Record<string, unknown> = {}) {
  const ws = await signupWorkspace();
  const client = await registerClient(ws.adminToken, {
    grant_types: ["authorization_code", "refresh_token"],
    ...metadata,
  });
  const session = await signIn(ws.email);
  return { ws, client, session };
}

async function freshCode(session: string, client: Client, scope?: string) {
  const { verifier, challenge } = newPkce();
  const { code } = await obtainCode(session, client, { challenge, scope });
  return { code, verifier };
}

/** A fresh code exchanged by a client_secret_basic client: its tokens. */
async function basicCodeTokens(session: string, client: Client) {
  const { code, verifier } = await freshCode(session, client);
  return parse(
    await oauthPost(
      "/v1/oauth/token",
      { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT },
      { basic: [client.client_id, client.client_secret!] },
    ),
    TokenResponseSchema,
  );
}

const refresh = (client: Client, refreshToken: string, opts: TokenCallOpts = {}) =>
  oauthPost(
    "/v1/oauth/token",
    {
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: client.client_id,
      client_secret: client.client_secret,
    },
    opts,
  );
/** A POST of `token` to an endpoint the client authenticates at, in the body or (`opts.basic`) with Basic. */
const tokenPost =
  (path: string) =>
  (client: Client, token: string | undefined, opts: TokenCallOpts = {}) =>
    oauthPost(
      path,
      {
        token,
        client_id: opts.basic ? undefined : client.client_id,
        client_secret: opts.basic ? undefined : client.client_secret,
      },
      opts,
    );
const introspect = tokenPost("/v1/oauth/introspect");
const revoke = tokenPost("/v1/oauth/revoke");

function expectNoStore(res: Response) {
  expect(res.headers.get("Cache-Control")).toBe("no-store");
  expect(res.headers.get("Pragma")).toBe("no-cache");
}

async function expectActive(token: string, active: boolean) {
  expect((await me(token)).status).toBe(active ? 200 : 401);
}

const grantOf = (accessToken: string) =>
  env.DB.prepare("SELECT g.* FROM oauth_grants g JOIN oauth_tokens t ON t.grant_id = g.id WHERE t.token_hash = ?")
    .bind(hashToken(accessToken))
    .first<Record<string, string | null>>();

describe("token: authorization_code", () => {
  it("exchanges a code for exactly the spec's TokenResp, not cacheable, tokens stored as hashes", async () => {
    const { client, session, ws } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const res = await exchange(client, code, verifier);
    expect(res.status).toBe(200);
    expectNoStore(res);
    const body = await parse(res, TokenResponseSchema.strict());
    expect(body.token_type).toBe("Bearer");
    expect(body.expires_in).toBe(3600);
    expect(body.access_token).toMatch(/^svc_at_[A-Za-z0-9_-]{43}$/);
    expect(body.refresh_token).toMatch(/^svc_rt_[A-Za-z0-9_-]{43}$/);
    expect(body.scope).toBe("agents:read conversations:read");

    const rows = await env.DB.prepare(
      "SELECT t.* FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE g.user_id = ?",
    )
      .bind(ws.user.id)
      .all<Record<string, string>>();
    expect(rows.results.map((r) => r.token_hash).sort()).toEqual(
      [hashToken(body.access_token), hashToken(body.refresh_token)].sort(),
    );
    expect(JSON.stringify(rows.results)).not.toContain(body.access_token.slice(7));
    const access = rows.results.find((r) => r.kind === "access")!;
    const refreshRow = rows.results.find((r) => r.kind === "refresh")!;
    expect(Date.parse(access.expires_at!) - Date.parse(access.created_at!)).toBe(3600_000);
    expect(Date.parse(refreshRow.expires_at!) - Date.parse(refreshRow.created_at!)).toBe(30 * 86_400_000);

    const identity = await me(body.access_token);
    expect(identity.status).toBe(200);
    expect(await identity.json()).toMatchObject({
      auth: "oauth",
      user: { id: ws.user.id },
      workspace: { id: ws.workspace.id },
      scopes: ["agents:read", "conversations:read"],
    });
  });

  it("takes a JSON body through the same rules as a form", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const bad = await oauthPost(
      "/v1/oauth/token",
      { grant_type: "authorization_code", code, code_verifier: verifier, client_id: client.client_id },
      { json: true },
    );
    await expectOAuthError(bad, 400, "invalid_request");
    const res = await oauthPost(
      "/v1/oauth/token",
      {
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: client.client_id,
      },
      { json: true },
    );
    expect(res.status).toBe(200);
    expectNoStore(res);
    await parse(res, TokenResponseSchema.strict());
  });

  it("refuses bodies that are neither form nor JSON, malformed JSON, non-string values and repeated parameters", async () => {
    const { client } = await setup();
    const text = await call("POST", "/v1/oauth/token", {
      rawBody: "grant_type=authorization_code",
      headers: { "Content-Type": "text/plain" },
    });
    expectNoStore(text);
    await expectOAuthError(text, 400, "invalid_request");
    await expectOAuthError(
      await call("POST", "/v1/oauth/token", { rawBody: "{", headers: { "Content-Type": "application/json" } }),
      400,
      "invalid_request",
    );
    await expectOAuthError(
      await call("POST", "/v1/oauth/token", {
        body: { grant_type: "refresh_token", refresh_token: 5, client_id: client.client_id },
      }),
      400,
      "invalid_request",
    );
    await expectOAuthError(await call("POST", "/v1/oauth/token", { body: ["grant_type"] }), 400, "invalid_request");
    const dup = await call("POST", "/v1/oauth/token", {
      rawBody: `grant_type=refresh_token&refresh_token=a&refresh_token=b&client_id=${client.client_id}`,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    await expectOAuthError(dup, 400, "invalid_request");
  });

  it("answers an oversized body with 413 in the OAuth shape, not cacheable, on token, introspect, revoke and registration", async () => {
    const { client, ws } = await setup();
    const huge = "x".repeat(1024 * 1024 + 1);
    for (const path of ["/v1/oauth/token", "/v1/oauth/introspect", "/v1/oauth/revoke"]) {
      const res = await oauthPost(path, {
        grant_type: "refresh_token",
        refresh_token: huge,
        token: huge,
        client_id: client.client_id,
      });
      expectNoStore(res);
      await expectOAuthError(res, 413, "invalid_request");
    }
    const reg = await call("POST", "/v1/oauth/register", {
      token: ws.adminToken,
      body: { redirect_uris: [REDIRECT], scope: "agents:read", client_name: huge },
    });
    await expectOAuthError(reg, 413, "invalid_request");
  });

  it("refuses a repeated parameter even when one of its values is empty", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const form = { "Content-Type": "application/x-www-form-urlencoded" };
    const body = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
    });
    for (const repeated of [
      `client_id=&client_id=${client.client_id}`,
      `client_id=${client.client_id}&client_id=`,
      `client_id=${client.client_id}&grant_type=`,
    ]) {
      const res = await call("POST", "/v1/oauth/token", { rawBody: `${body}&${repeated}`, headers: form });
      const error = await expectOAuthError(res, 400, "invalid_request");
      expect(error.error_description).toMatch(/more than once/);
    }
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  it("requires grant_type, code, code_verifier and redirect_uri, and a well-formed verifier", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const base = {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
    };
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, grant_type: undefined }),
      400,
      "invalid_request",
    );
    await expectOAuthError(await oauthPost("/v1/oauth/token", { ...base, code: undefined }), 400, "invalid_request");
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, code_verifier: undefined }),
      400,
      "invalid_request",
    );
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, redirect_uri: undefined }),
      400,
      "invalid_request",
    );
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, code_verifier: "short" }),
      400,
      "invalid_request",
    );
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, code_verifier: verifier + "!" }),
      400,
      "invalid_request",
    );
    for (const grant of [
      "client_credentials",
      "password",
      "implicit",
      "urn:ietf:params:oauth:grant-type:device_code",
    ]) {
      const res = await oauthPost("/v1/oauth/token", { ...base, grant_type: grant });
      expectNoStore(res);
      await expectOAuthError(res, 400, "unsupported_grant_type");
    }
    // None of that consumed the code.
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  it("refuses an unknown code", async () => {
    const { client } = await setup();
    await expectOAuthError(
      await exchange(client, "svc_code_" + "x".repeat(43), newPkce().verifier),
      400,
      "invalid_grant",
    );
  });

  it("refuses a wrong verifier without burning the code", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const body = await expectOAuthError(await exchange(client, code, newPkce().verifier), 400, "invalid_grant");
    expect(body.error_description).toMatch(/PKCE/);
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  it("refuses a redirect_uri other than the authorize step's", async () => {
    const { client, session, ws } = await setup();
    const other = "https://app.example/other";
    const c2 = await registerClient(ws.adminToken, { redirect_uris: [REDIRECT, other] });
    const { code, verifier } = await freshCode(session, c2);
    const body = await expectOAuthError(await exchange(c2, code, verifier, other), 400, "invalid_grant");
    expect(body.error_description).toMatch(/redirect_uri/);
    await expectOAuthError(await exchange(c2, code, verifier, REDIRECT + "/"), 400, "invalid_grant");
    expect((await exchange(c2, code, verifier)).status).toBe(200);
    expect(client.client_id).not.toBe(c2.client_id);
  });

  it("refuses a code issued to another client", async () => {
    const { client, session, ws } = await setup();
    const thief = await registerClient(ws.adminToken);
    const { code, verifier } = await freshCode(session, client);
    const body = await expectOAuthError(await exchange(thief, code, verifier), 400, "invalid_grant");
    expect(body.error_description).toMatch(/another client/);
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  it("refuses an expired code", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    // Clock control: age the code past its 10 minutes.
    await env.DB.prepare("UPDATE oauth_codes SET expires_at = ? WHERE code_hash = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), hashToken(code))
      .run();
    const body = await expectOAuthError(await exchange(client, code, verifier), 400, "invalid_grant");
    expect(body.error_description).toMatch(/expired/);
  });

  it("treats a replayed code as theft: refuses it and revokes every token issued from it", async () => {
    const { client, session, ws } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const first = await parse(await exchange(client, code, verifier), TokenResponseSchema);
    await expectActive(first.access_token, true);
    const again = await exchange(client, code, verifier);
    expectNoStore(again);
    await expectOAuthError(again, 400, "invalid_grant");
    await expectActive(first.access_token, false);
    await expectOAuthError(await refresh(client, first.refresh_token), 400, "invalid_grant");
    expect((await grantOf(first.access_token))?.revoke_reason).toBe("code_reuse");
    const [event] = await auditEvents(ws.workspace.id, "oauth.token.reuse");
    expect(event).toMatchObject({
      outcome: "denied",
      actor_kind: "oauth_client",
      actor_id: client.client_id,
      details: { client_id: client.client_id, token_kind: "code", family_revoked: true },
    });
  });

  it("lets exactly one of several racing exchanges of one code succeed", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const results = await Promise.all(Array.from({ length: 6 }, () => exchange(client, code, verifier)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) await expectOAuthError(r, 400, "invalid_grant");
    const grants = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_grants WHERE client_id = ?")
      .bind(client.client_id)
      .first<{ n: number }>();
    expect(grants?.n).toBe(1);
    // The losers are replays of a used code, so the family they raced for is revoked too.
    const winner = await parse(ok[0]!, TokenResponseSchema);
    await expectActive(winner.access_token, false);
  });
});

/** A POST whose body is sent as bytes, so it carries no Content-Type header at all. */
const postWithoutType = (path: string, params: Record<string, string>) =>
  call("POST", path, { rawBody: new TextEncoder().encode(new URLSearchParams(params).toString()) });

// The spec: "The token, introspect and revoke endpoints accept `application/x-www-form-urlencoded`
// (the default) or `application/json`."
describe("token, introspect and revoke: a body without Content-Type is a form", () => {
  it("exchanges a code, refreshes, introspects and revokes with no Content-Type header", async () => {
    expect(
      new Request("https://svc.test/", { method: "POST", body: new Uint8Array(1) }).headers.get("Content-Type"),
    ).toBeNull();
    const { client, session, ws } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const tokens = await parse(
      await postWithoutType("/v1/oauth/token", {
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: client.client_id,
      }),
      TokenResponseSchema.strict(),
    );
    const rotated = await parse(
      await postWithoutType("/v1/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: client.client_id,
      }),
      TokenResponseSchema,
    );
    const state = await parse(
      await postWithoutType("/v1/oauth/introspect", { token: rotated.access_token, client_id: client.client_id }),
      IntrospectionSchema,
    );
    expect(state).toMatchObject({ active: true, client_id: client.client_id });

    const revoked = await postWithoutType("/v1/oauth/revoke", {
      token: rotated.access_token,
      client_id: client.client_id,
    });
    expect(revoked.status).toBe(200);
    await expectActive(rotated.access_token, false);
    expect((await grantOf(rotated.access_token))?.revoke_reason).toBe("revoked");
    expect(await auditEvents(ws.workspace.id, "oauth.grant.revoke")).toHaveLength(1);
  });

  it("still refuses a body of another explicit type with invalid_request, on all three, and revokes nothing", async () => {
    const { client, session } = await setup();
    const tokens = await tokensFor(session, client);
    const form = new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      token: tokens.access_token,
      client_id: client.client_id,
    }).toString();
    for (const path of ["/v1/oauth/token", "/v1/oauth/introspect", "/v1/oauth/revoke"]) {
      const res = await call("POST", path, { rawBody: form, headers: { "Content-Type": "text/plain" } });
      await expectOAuthError(res, 400, "invalid_request");
    }
    await expectActive(tokens.access_token, true);
  });
});

describe("token: client authentication", () => {
  it("authenticates client_secret_post clients by the secret in the body, and only that way", async () => {
    const { client, session } = await setup({ token_endpoint_auth_method: "client_secret_post" });
    const { code, verifier } = await freshCode(session, client);
    const base = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT };

    const wrong = await oauthPost("/v1/oauth/token", {
      ...base,
      client_id: client.client_id,
      client_secret: "svc_csec_wrong",
    });
    await expectOAuthError(wrong, 401, "invalid_client");
    expect(wrong.headers.get("WWW-Authenticate")).toBeNull();
    expectNoStore(wrong);
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, client_id: client.client_id }),
      401,
      "invalid_client",
    );
    const viaBasic = await oauthPost("/v1/oauth/token", base, { basic: [client.client_id, client.client_secret!] });
    await expectOAuthError(viaBasic, 401, "invalid_client");
    expect(viaBasic.headers.get("WWW-Authenticate")).toMatch(/^Basic /);

    const ok = await oauthPost("/v1/oauth/token", {
      ...base,
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
    expect(ok.status).toBe(200);
  });

  it("authenticates client_secret_basic clients by HTTP Basic, and only that way", async () => {
    const { client, session } = await setup({ token_endpoint_auth_method: "client_secret_basic" });
    const { code, verifier } = await freshCode(session, client);
    const base = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT };

    const wrong = await oauthPost("/v1/oauth/token", base, { basic: [client.client_id, "svc_csec_wrong"] });
    await expectOAuthError(wrong, 401, "invalid_client");
    expect(wrong.headers.get("WWW-Authenticate")).toBe('Basic realm="oauth", charset="UTF-8"');
    const garbage = await oauthPost("/v1/oauth/token", base, { headers: { Authorization: "Basic !!!" } });
    await expectOAuthError(garbage, 401, "invalid_client");
    expect(garbage.headers.get("WWW-Authenticate")).toMatch(/^Basic /);
    const inBody = await oauthPost("/v1/oauth/token", {
      ...base,
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
    await expectOAuthError(inBody, 401, "invalid_client");
    expect(inBody.headers.get("WWW-Authenticate")).toBeNull();
    await expectOAuthError(
      await oauthPost(
        "/v1/oauth/token",
        { ...base, client_secret: client.client_secret },
        { basic: [client.client_id, client.client_secret!] },
      ),
      400,
      "invalid_request",
    );
    await expectOAuthError(
      await oauthPost(
        "/v1/oauth/token",
        { ...base, client_id: "svc_client_other" },
        { basic: [client.client_id, client.client_secret!] },
      ),
      400,
      "invalid_request",
    );

    // client_id repeated in the body alongside Basic is allowed when it matches.
    const ok = await oauthPost(
      "/v1/oauth/token",
      { ...base, client_id: client.client_id },
      { basic: [client.client_id, client.client_secret!] },
    );
    expect(ok.status).toBe(200);
  });

  it("refuses a secret from a public client, an unknown client and a missing client_id", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const base = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT };
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, client_id: client.client_id, client_secret: "anything" }),
      401,
      "invalid_client",
    );
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { ...base, client_id: "svc_client_unknown" }),
      401,
      "invalid_client",
    );
    await expectOAuthError(await oauthPost("/v1/oauth/token", base), 401, "invalid_client");
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });
});

describe("token: client authentication edge cases", () => {
  it("refuses HTTP Basic from a public client, with or without a secret, and keeps the code", async () => {
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const base = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT };
    for (const secret of ["", "anything"]) {
      const res = await oauthPost("/v1/oauth/token", base, { basic: [client.client_id, secret] });
      expectNoStore(res);
      await expectOAuthError(res, 401, "invalid_client");
      expect(res.headers.get("WWW-Authenticate")).toBe('Basic realm="oauth", charset="UTF-8"');
    }
    expect((await exchange(client, code, verifier)).status).toBe(200);
  });

  it("answers malformed Basic credentials with 401 invalid_client and a Basic challenge, never a 500", async () => {
    const { client } = await setup({ token_endpoint_auth_method: "client_secret_basic" });
    const headers = [
      "Basic",
      "Basic ",
      "Basic a=b",
      `Basic ${btoa("no-colon")}`,
      `Basic ${btoa(":secret")}`,
      `Basic ${btoa(`${client.client_id}%ZZ:${client.client_secret}`)}`,
      `Basic ${btoa(`${client.client_id}:%E0%A4%A`)}`,
      `Basic ${btoa("\xff\xfe:x")}`,
      `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}, Basic ${btoa("x:y")}`,
    ];
    for (const path of ["/v1/oauth/token", "/v1/oauth/introspect", "/v1/oauth/revoke"]) {
      for (const Authorization of headers) {
        const res = await oauthPost(
          path,
          { grant_type: "refresh_token", refresh_token: "svc_rt_x", token: "svc_at_x" },
          { headers: { Authorization } },
        );
        expectNoStore(res);
        await expectOAuthError(res, 401, "invalid_client");
        expect(res.headers.get("WWW-Authenticate"), `${path} ${Authorization}`).toBe(
          'Basic realm="oauth", charset="UTF-8"',
        );
      }
    }
  });

  it("decodes form-encoded Basic credentials (RFC 6749 §2.3.1)", async () => {
    const { client } = await setup({ token_endpoint_auth_method: "client_secret_basic" });
    const encoded = (s: string) => s.replaceAll("_", "%5F");
    const res = await oauthPost(
      "/v1/oauth/introspect",
      { token: "svc_at_unknown" },
      { headers: { Authorization: `Basic ${btoa(`${encoded(client.client_id)}:${encoded(client.client_secret!)}`)}` } },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ active: false });
  });

  it("accepts code_verifier of 43 to 128 unreserved characters and refuses anything else, without burning the code", async () => {
    const { client, session } = await setup();
    const unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    const verifierOf = (n: number) =>
      Array.from({ length: n }, (_, i) => unreserved[(i * 7) % unreserved.length]).join("");
    for (const [length, bad] of [
      [43, (v: string) => [v.slice(1), v.slice(1) + "+", v.slice(1) + "%", v.slice(1) + "é"]],
      [128, (v: string) => [v + "A", v.slice(1) + "/"]],
    ] as const) {
      const verifier = verifierOf(length);
      const { code } = await obtainCode(session, client, { challenge: pkceChallenge(verifier) });
      for (const b of bad(verifier)) await expectOAuthError(await exchange(client, code, b), 400, "invalid_request");
      expect((await exchange(client, code, verifier)).status, `length ${length}`).toBe(200);
    }
  });

  it("refuses JSON bodies whose values are not strings, and counts null as absent", async () => {
    const { client } = await setup();
    for (const value of [{ a: 1 }, ["x"], true, 5]) {
      await expectOAuthError(
        await call("POST", "/v1/oauth/introspect", { body: { token: value, client_id: client.client_id } }),
        400,
        "invalid_request",
      );
    }
    const nulls = await call("POST", "/v1/oauth/introspect", {
      body: { token: null, client_id: client.client_id, client_secret: null },
    });
    expect(nulls.status).toBe(200);
    expect(await nulls.json()).toEqual({ active: false });
    for (const body of ["[]", "null", '"token"', "{"]) {
      await expectOAuthError(
        await call("POST", "/v1/oauth/revoke", { rawBody: body, headers: { "Content-Type": "application/json" } }),
        400,
        "invalid_request",
      );
    }
  });
});

describe("token: browser-based clients", () => {
  it("answers CORS preflights and requests from any origin on token and revoke, never with credentials", async () => {
    for (const path of ["/v1/oauth/token", "/v1/oauth/revoke"]) {
      const preflight = await call("OPTIONS", path, {
        headers: {
          Origin: "https://spa.example",
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "content-type",
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("Access-Control-Allow-Origin")).toBe("*");
      expect(preflight.headers.get("Access-Control-Allow-Methods")).toContain("POST");
      expect(preflight.headers.get("Access-Control-Allow-Credentials")).toBeNull();
    }
    const { client, session } = await setup();
    const { code, verifier } = await freshCode(session, client);
    const res = await oauthPost(
      "/v1/oauth/token",
      {
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: client.client_id,
      },
      { headers: { Origin: "https://spa.example" } },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    // Registration is not open to other origins.
    const reg = await call("OPTIONS", "/v1/oauth/register", {
      headers: { Origin: "https://spa.example", "Access-Control-Request-Method": "POST" },
    });
    expect(reg.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });
});

describe("token: rate limit", () => {
  it("limits one address to 300 token requests a minute, answering 429 in the OAuth shape", async () => {
    const headers = { "CF-Connecting-IP": "203.0.113.77", "Content-Type": "application/x-www-form-urlencoded" };
    const statuses: number[] = [];
    for (let i = 0; i < 300; i++)
      statuses.push((await call("POST", "/v1/oauth/token", { rawBody: "grant_type=refresh_token", headers })).status);
    expect(statuses.every((s) => s === 401)).toBe(true);
    const limited = await call("POST", "/v1/oauth/token", { rawBody: "grant_type=refresh_token", headers });
    await expectOAuthError(limited, 429, "rate_limited");
    expect(limited.headers.get("Retry-After")).toBe("60");
    // Other addresses are unaffected.
    await expectOAuthError(
      await call("POST", "/v1/oauth/token", {
        rawBody: "grant_type=refresh_token",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      }),
      401,
      "invalid_client",
    );
  });
});

describe("token: refresh_token", () => {
  it("rotates: a new pair with the original scopes, the old refresh token spent", async () => {
    const { client, session } = await setup();
    const first = await tokensFor(session, client, "agents:read");
    const res = await refresh(client, first.refresh_token);
    expect(res.status).toBe(200);
    expectNoStore(res);
    const second = await parse(res, TokenResponseSchema.strict());
    expect(second.scope).toBe("agents:read");
    expect(second.expires_in).toBe(3600);
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    await expectActive(second.access_token, true);
    const old = await env.DB.prepare("SELECT revoked_at, replaced_by FROM oauth_tokens WHERE token_hash = ?")
      .bind(hashToken(first.refresh_token))
      .first<{ revoked_at: string; replaced_by: string }>();
    expect(old?.revoked_at).toBeTruthy();
    const next = await env.DB.prepare("SELECT id FROM oauth_tokens WHERE token_hash = ?")
      .bind(hashToken(second.refresh_token))
      .first<{ id: string }>();
    expect(old?.replaced_by).toBe(next?.id);
    // Chains keep going, in JSON too.
    const third = await parse(await refresh(client, second.refresh_token, { json: true }), TokenResponseSchema);
    expect(third.scope).toBe("agents:read");
  });

  it("revokes the whole family when a rotated refresh token comes back", async () => {
    const { client, session, ws } = await setup();
    const first = await tokensFor(session, client);
    const second = await parse(await refresh(client, first.refresh_token), TokenResponseSchema);
    const third = await parse(await refresh(client, second.refresh_token), TokenResponseSchema);
    const reuse = await refresh(client, first.refresh_token);
    expectNoStore(reuse);
    const body = await expectOAuthError(reuse, 400, "invalid_grant");
    expect(body.error_description).toMatch(/family/);
    for (const t of [first, second, third]) await expectActive(t.access_token, false);
    await expectOAuthError(await refresh(client, third.refresh_token), 400, "invalid_grant");
    const remaining = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM oauth_tokens WHERE grant_id = ? AND revoked_at IS NULL",
    )
      .bind((await grantOf(first.access_token))!.id)
      .first<{ n: number }>();
    expect(remaining?.n).toBe(0);
    expect((await grantOf(first.access_token))?.revoke_reason).toBe("refresh_reuse");
    const [event] = await auditEvents(ws.workspace.id, "oauth.token.reuse");
    expect(event).toMatchObject({
      outcome: "denied",
      target: `oauth_grant:${(await grantOf(first.access_token))!.id}`,
      details: { token_kind: "refresh", family_revoked: true },
    });
    // Other families of the same user and client are untouched.
    const other = await tokensFor(session, client);
    await expectActive(other.access_token, true);
  });

  it("lets exactly one of several racing refreshes of one token succeed", async () => {
    const { client, session } = await setup();
    const first = await tokensFor(session, client);
    const results = await Promise.all(Array.from({ length: 6 }, () => refresh(client, first.refresh_token)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) await expectOAuthError(r, 400, "invalid_grant");
    const live = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_tokens WHERE grant_id = ? AND kind = 'refresh'")
      .bind((await grantOf(first.access_token))!.id)
      .first<{ n: number }>();
    expect(live?.n).toBe(2);
  });

  it("refuses another client's refresh token without touching its family", async () => {
    const { client, session, ws } = await setup();
    const other = await registerClient(ws.adminToken);
    const tokens = await tokensFor(session, client);
    const body = await expectOAuthError(await refresh(other, tokens.refresh_token), 400, "invalid_grant");
    expect(body.error_description).toMatch(/another client/);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it("refuses a live refresh token whose grant is revoked, and rotates nothing", async () => {
    const { client, session } = await setup();
    const tokens = await tokensFor(session, client);
    const grant = (await grantOf(tokens.access_token))!;
    // Only the grant row: the rotation's own grant check must refuse it.
    await env.DB.prepare("UPDATE oauth_grants SET revoked_at = ? WHERE id = ?")
      .bind(new Date().toISOString(), grant.id)
      .run();
    const body = await expectOAuthError(await refresh(client, tokens.refresh_token), 400, "invalid_grant");
    expect(body.error_description).toMatch(/revoked/);
    const old = await env.DB.prepare("SELECT revoked_at, replaced_by FROM oauth_tokens WHERE token_hash = ?")
      .bind(hashToken(tokens.refresh_token))
      .first();
    expect(old).toEqual({ revoked_at: null, replaced_by: null });
  });

  it("refuses unknown, expired, access-token and missing refresh tokens", async () => {
    const { client, session } = await setup();
    const tokens = await tokensFor(session, client);
    await expectOAuthError(await refresh(client, "svc_rt_" + "x".repeat(43)), 400, "invalid_grant");
    await expectOAuthError(await refresh(client, tokens.access_token), 400, "invalid_grant");
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { grant_type: "refresh_token", client_id: client.client_id }),
      400,
      "invalid_request",
    );
    await env.DB.prepare("UPDATE oauth_tokens SET expires_at = ? WHERE token_hash = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), hashToken(tokens.refresh_token))
      .run();
    const body = await expectOAuthError(await refresh(client, tokens.refresh_token), 400, "invalid_grant");
    expect(body.error_description).toMatch(/expired/);
    // An expired token is not a replay: the family's access token still works.
    await expectActive(tokens.access_token, true);
  });

  it("authenticates confidential clients on refresh too", async () => {
    const { client, session } = await setup({ token_endpoint_auth_method: "client_secret_basic" });
    const tokens = await basicCodeTokens(session, client);
    await expectOAuthError(
      await oauthPost(
        "/v1/oauth/token",
        { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
        { basic: [client.client_id, "nope"] },
      ),
      401,
      "invalid_client",
    );
    const ok = await oauthPost(
      "/v1/oauth/token",
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
      { basic: [client.client_id, client.client_secret!] },
    );
    expect(ok.status).toBe(200);
  });
});

describe("token: refresh_token, the client authenticated in the rotation's batch", () => {
  it("rotates in one D1 round trip: the client check is in the rotation's batch", async () => {
    const { client, session } = await setup();
    const tokens = await tokensFor(session, client);
    const { res, trips } = await fetchWithDb(watchedDb(), "POST", "/v1/oauth/token", {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: client.client_id,
      }).toString(),
    });
    expect(res.status).toBe(200);
    expect(trips).toBe(1);
  });

  it("refuses an unknown or deleted client with invalid_client and rotates nothing", async () => {
    const { client, session, ws } = await setup();
    const tokens = await tokensFor(session, client);
    const unknown = await expectOAuthError(
      await refresh({ client_id: "svc_client_0000000000000000" }, tokens.refresh_token),
      401,
      "invalid_client",
    );
    expect(unknown.error_description).toMatch(/Unknown or deleted/);
    const deleted = await registerClient(ws.adminToken, { grant_types: ["authorization_code", "refresh_token"] });
    const theirs = await tokensFor(session, deleted);
    await env.DB.prepare("UPDATE oauth_clients SET disabled_at = ? WHERE client_id = ?")
      .bind(new Date().toISOString(), deleted.client_id)
      .run();
    await expectOAuthError(await refresh(deleted, theirs.refresh_token), 401, "invalid_client");
    const spent = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM oauth_tokens WHERE token_hash IN (?, ?) AND replaced_by IS NOT NULL",
    )
      .bind(hashToken(tokens.refresh_token), hashToken(theirs.refresh_token))
      .first<{ n: number }>();
    expect(spent?.n).toBe(0);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it("refuses a confidential client's other method or wrong secret with invalid_client and rotates nothing", async () => {
    const { client, session } = await setup({ token_endpoint_auth_method: "client_secret_post" });
    const tokens = await tokensFor(session, client);
    const attempts: [Record<string, string | undefined>, TokenCallOpts][] = [
      // Basic, with the right secret, for a client registered with client_secret_post
      [{}, { basic: [client.client_id, client.client_secret!] }],
      // no secret at all
      [{ client_id: client.client_id }, {}],
      // a wrong secret
      [{ client_id: client.client_id, client_secret: "svc_csec_wrong" }, {}],
    ];
    for (const [credentials, opts] of attempts) {
      const res = await oauthPost(
        "/v1/oauth/token",
        { grant_type: "refresh_token", refresh_token: tokens.refresh_token, ...credentials },
        opts,
      );
      await expectOAuthError(res, 401, "invalid_client");
    }
    const row = await env.DB.prepare("SELECT revoked_at, replaced_by FROM oauth_tokens WHERE token_hash = ?")
      .bind(hashToken(tokens.refresh_token))
      .first();
    expect(row).toEqual({ revoked_at: null, replaced_by: null });
    const ok = await refresh(client, tokens.refresh_token);
    expect(ok.status).toBe(200);
  });

  it("still answers invalid_client before a malformed request or an unknown resource", async () => {
    const missing = await oauthPost("/v1/oauth/token", { grant_type: "refresh_token", client_id: "svc_client_nope" });
    await expectOAuthError(missing, 401, "invalid_client");
    const foreign = await oauthPost("/v1/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: "svc_rt_x",
      client_id: "svc_client_nope",
      resource: "https://elsewhere.example",
    });
    await expectOAuthError(foreign, 401, "invalid_client");
  });
});

describe("access tokens on the API", () => {
  it("are refused once expired", async () => {
    const { client, session } = await setup();
    const tokens = await tokensFor(session, client);
    await env.DB.prepare("UPDATE oauth_tokens SET expires_at = ? WHERE token_hash = ?")
      .bind(new Date(Date.now() - 1).toISOString(), hashToken(tokens.access_token))
      .run();
    const res = await me(tokens.access_token);
    expect(res.status).toBe(401);
    expect(res.headers.get("WWW-Authenticate")).toBe(
      'Bearer error="invalid_token", resource_metadata="https://svc.test/.well-known/oauth-protected-resource"',
    );
  });

  it("are capped by the user's role and by the client's current scopes", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "admin agents:read memory:read" });
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const tokens = await tokensFor(await signIn(member.email), client);
    // admin is granted only while the user is an admin: a member's token never claims it.
    expect(tokens.scope).toBe("agents:read memory:read");
    expect(((await (await me(tokens.access_token)).json()) as { scopes: string[] }).scopes).toEqual([
      "agents:read",
      "memory:read",
    ]);
    // Admin-only routes stay closed to a member's OAuth token.
    expect((await call("GET", "/v1/api/admin/users", { token: tokens.access_token })).status).toBe(403);

    const put = await call("PUT", `/v1/oauth/register/${client.client_id}`, {
      token: client.registration_access_token,
      body: { redirect_uris: [REDIRECT], scope: "agents:read" },
    });
    expect(put.status).toBe(200);
    expect(((await (await me(tokens.access_token)).json()) as { scopes: string[] }).scopes).toEqual(["agents:read"]);
    const intro = await parse(await introspect(client, tokens.access_token), IntrospectionSchema);
    expect(intro.scope).toBe("agents:read");
  });

  it("open admin routes to an admin's token that holds the admin scope", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "admin agents:read" });
    const tokens = await tokensFor(await signIn(ws.email), client);
    expect((await call("GET", "/v1/api/admin/users", { token: tokens.access_token })).status).toBe(200);
    expect((await call("GET", "/v1/agents", { token: tokens.access_token })).status).toBe(200);
  });
});

describe("introspection", () => {
  it("describes the client's own live tokens with exactly the spec's fields", async () => {
    const { client, session, ws } = await setup();
    const tokens = await tokensFor(session, client);
    for (const token of [tokens.access_token, tokens.refresh_token]) {
      const res = await introspect(client, token);
      expect(res.status).toBe(200);
      expectNoStore(res);
      const body = await parse(res, IntrospectionSchema.strict());
      expect(Object.keys(body).sort()).toEqual([
        "active",
        "client_id",
        "exp",
        "iat",
        "scope",
        "sub",
        "token_type",
        "username",
      ]);
      expect(body).toMatchObject({
        active: true,
        scope: "agents:read conversations:read",
        client_id: client.client_id,
        username: ws.email,
        token_type: "Bearer",
        sub: ws.user.id,
      });
      expect(Math.abs(body.iat! - Date.now() / 1000)).toBeLessThan(60);
    }
    const access = await parse(await introspect(client, tokens.access_token, { json: true }), IntrospectionSchema);
    expect(access.exp! - access.iat!).toBe(3600);
  });

  it("reads another client's, unknown, revoked, expired and missing tokens as { active: false } only", async () => {
    const { client, session, ws } = await setup();
    const other = await registerClient(ws.adminToken);
    const mine = await tokensFor(session, client);
    const theirs = await tokensFor(session, other);
    const expired = await tokensFor(session, client);
    await env.DB.prepare("UPDATE oauth_tokens SET expires_at = ? WHERE token_hash = ?")
      .bind(new Date(Date.now() - 1).toISOString(), hashToken(expired.access_token))
      .run();
    const rotated = await tokensFor(session, client);
    await refresh(client, rotated.refresh_token);
    for (const token of [
      theirs.access_token,
      theirs.refresh_token,
      "svc_at_unknown",
      "svc_pat_x",
      ws.adminToken,
      expired.access_token,
      rotated.refresh_token,
    ]) {
      const res = await introspect(client, token);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ active: false });
    }
    expect(await (await introspect(client, undefined)).json()).toEqual({ active: false });
    expect((await parse(await introspect(client, mine.access_token), IntrospectionSchema)).active).toBe(true);
  });

  it("is 401 for a bad confidential secret, an unknown client and a deleted client", async () => {
    const { client, session } = await setup({ token_endpoint_auth_method: "client_secret_post" });
    const { code, verifier } = await freshCode(session, client);
    const tokens = await parse(await exchange(client, code, verifier), TokenResponseSchema);
    await expectOAuthError(
      await introspect({ ...client, client_secret: "svc_csec_bad" }, tokens.access_token),
      401,
      "invalid_client",
    );
    await expectOAuthError(
      await introspect({ client_id: "svc_client_nope" }, tokens.access_token),
      401,
      "invalid_client",
    );
    await expectOAuthError(
      await introspect(client, tokens.access_token, { basic: [client.client_id, client.client_secret!] }),
      401,
      "invalid_client",
    );
    expect(
      (await call("DELETE", `/v1/oauth/register/${client.client_id}`, { token: client.registration_access_token }))
        .status,
    ).toBe(204);
    await expectOAuthError(await introspect(client, tokens.access_token), 401, "invalid_client");
  });
});

describe("revocation", () => {
  it("revoking an access token revokes its whole family, and is audited", async () => {
    const { client, session, ws } = await setup();
    const tokens = await tokensFor(session, client);
    const rotated = await parse(await refresh(client, tokens.refresh_token), TokenResponseSchema);
    const res = await revoke(client, rotated.access_token);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    await expectActive(rotated.access_token, false);
    await expectActive(tokens.access_token, false);
    await expectOAuthError(await refresh(client, rotated.refresh_token), 400, "invalid_grant");
    const [event] = await auditEvents(ws.workspace.id, "oauth.grant.revoke");
    expect(event).toMatchObject({
      actor_kind: "oauth_client",
      actor_id: client.client_id,
      details: { client_id: client.client_id, reason: "revoked", count: 1 },
    });
    // Revoking again is still 200 and changes nothing.
    expect((await revoke(client, rotated.access_token)).status).toBe(200);
    expect(await auditEvents(ws.workspace.id, "oauth.grant.revoke")).toHaveLength(1);
  });

  it("revoking a refresh token revokes its access tokens (JSON body too)", async () => {
    const { client, session } = await setup();
    const tokens = await tokensFor(session, client);
    expect((await revoke(client, tokens.refresh_token, { json: true })).status).toBe(200);
    await expectActive(tokens.access_token, false);
    expect(await (await introspect(client, tokens.refresh_token)).json()).toEqual({ active: false });
  });

  it("does nothing to another client's token (RFC 7009 §2.1), an unknown token or no token, and still answers 200", async () => {
    const { client, session, ws } = await setup();
    const other = await registerClient(ws.adminToken);
    const theirs = await tokensFor(session, other);
    for (const token of [theirs.access_token, theirs.refresh_token, "svc_rt_unknown", "not-a-token", undefined]) {
      const res = await revoke(client, token);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
    await expectActive(theirs.access_token, true);
    expect((await grantOf(theirs.access_token))?.revoked_at).toBeNull();
    expect(await auditEvents(ws.workspace.id, "oauth.grant.revoke")).toHaveLength(0);
    expect((await refresh(other, theirs.refresh_token)).status).toBe(200);
  });

  // The spec: `POST /v1/oauth/revoke` … "200 always, 401 (bad confidential secret)".
  it("answers 200 and revokes nothing for a missing client_id, an unknown client or an unusable document client", async () => {
    const { client, session, ws } = await setup();
    const tokens = await tokensFor(session, client);
    const calls = [
      oauthPost("/v1/oauth/revoke", { token: tokens.access_token }),
      oauthPost("/v1/oauth/revoke", { token: tokens.access_token }, { json: true }),
      oauthPost("/v1/oauth/revoke", { token: tokens.access_token, client_id: "svc_client_nope" }),
      oauthPost("/v1/oauth/revoke", { token: tokens.access_token, client_id: "svc_client_nope", client_secret: "x" }),
      oauthPost("/v1/oauth/revoke", { token: tokens.refresh_token }, { basic: ["svc_client_nope", "svc_csec_x"] }),
      oauthPost("/v1/oauth/revoke", { token: tokens.access_token, client_id: "https://unknown.example/client.json" }),
      oauthPost("/v1/oauth/revoke", { client_id: "svc_client_nope" }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await res.text()).toBe("");
      expectNoStore(res);
    }
    await expectActive(tokens.access_token, true);
    expect((await grantOf(tokens.access_token))?.revoked_at).toBeNull();
    expect(await auditEvents(ws.workspace.id, "oauth.grant.revoke")).toHaveLength(0);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it("is 401 only for a confidential client whose secret does not verify, and then revokes nothing", async () => {
    const post = await setup({ token_endpoint_auth_method: "client_secret_post" });
    const { code, verifier } = await freshCode(post.session, post.client);
    const postTokens = await parse(await exchange(post.client, code, verifier), TokenResponseSchema);
    for (const res of [
      await revoke({ ...post.client, client_secret: "svc_csec_bad" }, postTokens.access_token),
      // A confidential client without its secret.
      await revoke({ client_id: post.client.client_id }, postTokens.access_token),
    ]) {
      await expectOAuthError(res, 401, "invalid_client");
    }
    await expectActive(postTokens.access_token, true);
    expect(await auditEvents(post.ws.workspace.id, "oauth.grant.revoke")).toHaveLength(0);
  });

  it("is 401 for a bad Basic secret, with the Basic challenge, and then revokes nothing", async () => {
    const { client, session } = await setup({ token_endpoint_auth_method: "client_secret_basic" });
    const tokens = await basicCodeTokens(session, client);
    const bad = await revoke(client, tokens.access_token, { basic: [client.client_id, "svc_csec_bad"] });
    await expectOAuthError(bad, 401, "invalid_client");
    expect(bad.headers.get("WWW-Authenticate")).toMatch(/^Basic /);
    await expectActive(tokens.access_token, true);
    expect(
      (await revoke(client, tokens.access_token, { basic: [client.client_id, client.client_secret!] })).status,
    ).toBe(200);
    await expectActive(tokens.access_token, false);
  });
});

describe("deleted clients", () => {
  it("lose every token and can no longer exchange, refresh, introspect or revoke", async () => {
    const { client, session, ws } = await setup();
    const tokens = await tokensFor(session, client);
    const pending = await freshCode(session, client);
    const otherWs = await signupWorkspace();
    const otherTokens = await tokensFor(await signIn(otherWs.email), client);
    expect(
      (await call("DELETE", `/v1/oauth/register/${client.client_id}`, { token: client.registration_access_token }))
        .status,
    ).toBe(204);

    await expectActive(tokens.access_token, false);
    await expectActive(otherTokens.access_token, false);
    await expectOAuthError(await exchange(client, pending.code, pending.verifier), 401, "invalid_client");
    await expectOAuthError(await refresh(client, tokens.refresh_token), 401, "invalid_client");
    await expectOAuthError(await introspect(client, tokens.access_token), 401, "invalid_client");
    // Revocation is "200 always": a deleted client is an unknown one, and its tokens are revoked already.
    expect((await revoke(client, tokens.access_token)).status).toBe(200);
    expect((await grantOf(tokens.access_token))?.revoke_reason).toBe("client_deleted");

    const [deleted] = await auditEvents(ws.workspace.id, "oauth.client.delete");
    expect(deleted!.details).toMatchObject({ revoked_grants: 2 });
    const [theirs] = await auditEvents(otherWs.workspace.id, "oauth.grant.revoke");
    expect(theirs).toMatchObject({ details: { reason: "client_deleted", count: 1, client_id: client.client_id } });
  });
});

describe("erasure", () => {
  const oauthSteps = [{ area: "oauth", step: oauthArea.eraseStep! }];

  it("revokes the user's grants and tokens, forgets consents and unused codes, and counts them", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const session = await signIn(member.email);
    const a = await tokensFor(session, client);
    const b = await tokensFor(session, client);
    await freshCode(session, client);
    const bystander = await tokensFor(await signIn(ws.email), client);

    const counts = await runEraseSteps(env, oauthSteps, ws.workspace.id, member.user.id);
    // Two grants and one consent.
    expect(counts.oauth_grants).toBe(3);
    await expectActive(a.access_token, false);
    await expectActive(b.access_token, false);
    await expectOAuthError(await refresh(client, b.refresh_token), 400, "invalid_grant");
    await expectActive(bystander.access_token, true);
    const left = await env.DB.prepare(
      "SELECT (SELECT COUNT(*) FROM oauth_consents WHERE user_id = ?1) AS consents, (SELECT COUNT(*) " +
        "FROM oauth_codes WHERE user_id = ?1 AND consumed_at IS NULL) AS codes",
    )
      .bind(member.user.id)
      .first<{ consents: number; codes: number }>();
    expect(left).toEqual({ consents: 0, codes: 0 });
    expect((await runEraseSteps(env, oauthSteps, ws.workspace.id, member.user.id)).oauth_grants).toBe(0);
  });
});

describe("token: audit", () => {
  it("records each issued and each rotated grant, without any token value", async () => {
    const { ws, client, session } = await setup();
    const first = await tokensFor(session, client);
    const rotated = await parse(await refresh(client, first.refresh_token), TokenResponseSchema);
    const [issued] = await auditEvents(ws.workspace.id, "oauth.token.issue");
    const [refreshed] = await auditEvents(ws.workspace.id, "oauth.token.refresh");
    expect(issued).toMatchObject({
      actor_kind: "oauth_client",
      actor_id: client.client_id,
      intent: "issue",
      details: { client_id: client.client_id },
    });
    expect(issued!.target).toMatch(/^oauth_grant:[0-9a-f-]{36}$/);
    expect(refreshed).toMatchObject({ target: issued!.target, intent: "rotate", details: { scope: rotated.scope } });
    const text = JSON.stringify([issued, refreshed]);
    for (const secret of [first.access_token, first.refresh_token, rotated.access_token, rotated.refresh_token])
      expect(text).not.toContain(secret);
  });

  it("delivers the rotation's event into the grant's workspace chain after the answer, unasked", async () => {
    const { ws, client, session } = await setup();
    const first = await tokensFor(session, client);
    await deliverNow(env, ws.workspace.id);
    // Answered, and the work it left for after the answer done.
    const res = await callWith({}, "POST", "/v1/oauth/token", {
      body: { grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: client.client_id },
    });
    expect(res.status).toBe(200);
    // Read from the chain without delivering first (auditEvents would); an isolate's delivery
    // loop for the workspace may still be in a round another request started.
    await eventually(async () => {
      const { events } = await auditLog(env, ws.workspace.id).list(
        { days: 0, kind: "oauth.token.refresh" },
        { page: 1, pageSize: 10 },
      );
      return events.length === 1;
    });
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
  });

  it("rotates nothing when the rotation's event cannot be written: the same refresh token works afterwards", async () => {
    const { ws, client, session } = await setup();
    const first = await tokensFor(session, client);
    await env.DB.prepare(
      `CREATE TRIGGER fail_refresh_event BEFORE INSERT ON audit_outbox WHEN NEW.event LIKE '%"oauth.token.refresh"%'
       BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    ).run();
    try {
      expect((await refresh(client, first.refresh_token)).status).toBe(500);
    } finally {
      await env.DB.prepare("DROP TRIGGER fail_refresh_event").run();
    }
    expect(await auditEvents(ws.workspace.id, "oauth.token.refresh")).toHaveLength(0);
    const rotated = await parse(await refresh(client, first.refresh_token), TokenResponseSchema);
    expect((await auditEvents(ws.workspace.id, "oauth.token.refresh"))[0]).toMatchObject({
      target: expect.stringMatching(/^oauth_grant:/),
      details: { scope: rotated.scope },
    });
  });
});
