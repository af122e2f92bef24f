import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ErasureSummarySchema } from "../src/admin/erase-schemas";
import { AuditListSchema, VerifyResultSchema } from "../src/audit-log/schemas";
import { call, expectProblem, parse } from "./support/api";
import { addUser, PASSWORD, signupWorkspace } from "./support/seed";

async function signInSession(email: string): Promise<string> {
  const page = await call("GET", "/v1/signin");
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(await page.text())![1]!;
  const csrfCookie = page.headers.getSetCookie()[0]!.split(";")[0]!;
  const res = await call("POST", "/v1/signin", {
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: csrfCookie },
    rawBody: new URLSearchParams({ email, password: PASSWORD, csrf_token: csrf }).toString(),
  });
  expect(res.status).toBe(303);
  return res.headers
    .getSetCookie()
    .find((c) => c.startsWith("svc_session="))!
    .split(";")[0]!;
}

describe("POST /v1/admin/users/{id}/erase", () => {
  it("revokes credentials, anonymizes the user, removes their email from the audit log and keeps the chain valid", async () => {
    const ws = await signupWorkspace();
    const victim = await addUser(ws.adminToken, "member", ["agents:read"]);
    const session = await signInSession(victim.email);
    expect((await call("GET", "/v1/api/me", { headers: { Cookie: session } })).status).toBe(200);
    // a failed sign-in also carries the email in its details
    await call("POST", "/v1/signin", {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      rawBody: `email=${encodeURIComponent(victim.email)}&password=x`,
    });

    const res = await call("POST", `/v1/admin/users/${victim.user.id}/erase`, {
      token: ws.adminToken,
      body: { confirm: true, reason: "GDPR request" },
    });
    expect(res.status).toBe(200);
    const summary = await parse(res, ErasureSummarySchema);
    expect(summary).toMatchObject({ user_id: victim.user.id, erased: true });
    expect(summary.counts.tokens).toBe(1);
    expect(summary.counts.sessions).toBe(1);
    expect(summary.counts.audit_events_redacted).toBeGreaterThanOrEqual(3);

    await expectProblem(await call("GET", "/v1/api/me", { token: victim.token }), 401);
    expect((await call("GET", "/v1/api/me", { headers: { Cookie: session } })).status).toBe(401);

    const row = await env.DB.prepare("SELECT email, name, password_hash, erased_at FROM users WHERE id = ?")
      .bind(victim.user.id)
      .first();
    expect(row).toMatchObject({ email: null, name: null, password_hash: null });
    expect(row?.erased_at).toBeTruthy();

    const auditText = await (
      await call("GET", "/v1/admin/audit?days=0&page_size=200", { token: ws.adminToken })
    ).text();
    expect(auditText).not.toContain(victim.email);
    expect(auditText).not.toContain("member user");
    const list = AuditListSchema.parse(JSON.parse(auditText));
    const erase = list.events.find((e) => e.kind === "user.erase")!;
    expect(erase).toMatchObject({ target: `user:${victim.user.id}`, actor_id: ws.user.id });
    expect(erase.details).toMatchObject({ self: false });
    expect(JSON.stringify(erase.details)).not.toContain("GDPR");

    const verify = await parse(
      await call("GET", "/v1/admin/audit/verify", { token: ws.adminToken }),
      VerifyResultSchema,
    );
    expect(verify.ok).toBe(true);

    // The email is free again.
    expect(
      (
        await call("POST", "/v1/api/admin/users", {
          token: ws.adminToken,
          body: { email: victim.email, role: "member" },
        })
      ).status,
    ).toBe(201);
  });

  it("refuses self-erase (400), foreign and unknown users (404), unconfirmed requests (400) and members (403)", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    await expectProblem(
      await call("POST", `/v1/admin/users/${a.user.id}/erase`, { token: a.adminToken, body: { confirm: true } }),
      400,
      "self_erase",
    );
    await expectProblem(
      await call("POST", `/v1/admin/users/${b.user.id}/erase`, { token: a.adminToken, body: { confirm: true } }),
      404,
      "not_found",
    );
    await expectProblem(
      await call("POST", `/v1/admin/users/${crypto.randomUUID()}/erase`, {
        token: a.adminToken,
        body: { confirm: true },
      }),
      404,
      "not_found",
    );
    await expectProblem(
      await call("POST", `/v1/admin/users/not-a-uuid/erase`, { token: a.adminToken, body: { confirm: true } }),
      400,
      "validation_failed",
    );
    const member = await addUser(a.adminToken, "member", ["agents:read"]);
    await expectProblem(
      await call("POST", `/v1/admin/users/${member.user.id}/erase`, { token: a.adminToken, body: { confirm: false } }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("POST", `/v1/admin/users/${member.user.id}/erase`, { token: a.adminToken, body: {} }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("POST", `/v1/admin/users/${a.user.id}/erase`, { token: member.token, body: { confirm: true } }),
      403,
      "admin_required",
    );
    // b's admin untouched; a second erase of the same user is 404
    expect((await call("GET", "/v1/api/me", { token: b.adminToken })).status).toBe(200);
    await call("POST", `/v1/admin/users/${member.user.id}/erase`, { token: a.adminToken, body: { confirm: true } });
    await expectProblem(
      await call("POST", `/v1/admin/users/${member.user.id}/erase`, { token: a.adminToken, body: { confirm: true } }),
      404,
    );
  });
});

describe("POST /v1/api/me/erase", () => {
  it("erases the caller who gives their password", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const res = await call("POST", "/v1/api/me/erase", {
      token: member.token,
      body: { confirm: true, password: PASSWORD },
    });
    const summary = await parse(res, ErasureSummarySchema);
    expect(summary.user_id).toBe(member.user.id);
    await expectProblem(await call("GET", "/v1/api/me", { token: member.token }), 401);
    const list = await parse(
      await call("GET", "/v1/admin/audit?kind=user.erase", { token: ws.adminToken }),
      AuditListSchema,
    );
    expect(list.events[0]).toMatchObject({ actor_id: member.user.id, details: { self: true } });
  });

  it("refuses a token alone, or a wrong password, with 403 reauthentication_required and keeps the account", async () => {
    const ws = await signupWorkspace();
    // An integration's read-only token: it must not be able to destroy its user.
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    for (const body of [{ confirm: true }, { confirm: true, password: "not the password" }]) {
      await expectProblem(
        await call("POST", "/v1/api/me/erase", { token: member.token, body }),
        403,
        "reauthentication_required",
      );
    }
    expect((await call("GET", "/v1/api/me", { token: member.token })).status).toBe(200);
    const denied = await parse(
      await call("GET", "/v1/admin/audit?kind=access.denied", { token: ws.adminToken }),
      AuditListSchema,
    );
    expect(denied.events.filter((e) => e.intent === "reauthenticate" && e.actor_id === member.user.id)).toHaveLength(2);
  });

  it("takes a sign-in session younger than 10 minutes instead of the password, not an older one", async () => {
    const ws = await signupWorkspace();
    const fresh = await addUser(ws.adminToken, "member", ["agents:read"]);
    const freshSession = await signInSession(fresh.email);
    const res = await call("POST", "/v1/api/me/erase", { headers: { Cookie: freshSession }, body: { confirm: true } });
    expect((await parse(res, ErasureSummarySchema)).user_id).toBe(fresh.user.id);

    const stale = await addUser(ws.adminToken, "member", ["agents:read"]);
    const staleSession = await signInSession(stale.email);
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60_000).toISOString();
    await env.DB.prepare("UPDATE sessions SET created_at = ?1 WHERE user_id = ?2")
      .bind(elevenMinutesAgo, stale.user.id)
      .run();
    await expectProblem(
      await call("POST", "/v1/api/me/erase", { headers: { Cookie: staleSession }, body: { confirm: true } }),
      403,
      "reauthentication_required",
    );
    const withPassword = await call("POST", "/v1/api/me/erase", {
      headers: { Cookie: staleSession },
      body: { confirm: true, password: PASSWORD },
    });
    expect((await parse(withPassword, ErasureSummarySchema)).user_id).toBe(stale.user.id);
  });

  it("refuses the last admin with 400 but lets an admin go when another remains", async () => {
    const ws = await signupWorkspace();
    const body = { confirm: true, password: PASSWORD };
    await expectProblem(await call("POST", "/v1/api/me/erase", { token: ws.adminToken, body }), 400, "last_admin");
    expect((await call("GET", "/v1/api/me", { token: ws.adminToken })).status).toBe(200);
    await addUser(ws.adminToken, "admin", ["admin"]);
    expect((await call("POST", "/v1/api/me/erase", { token: ws.adminToken, body })).status).toBe(200);
  });

  it("requires authentication and confirmation", async () => {
    await expectProblem(await call("POST", "/v1/api/me/erase", { body: { confirm: true, password: PASSWORD } }), 401);
    const ws = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/api/me/erase", { token: ws.adminToken, body: { confirm: "yes", password: PASSWORD } }),
      400,
      "validation_failed",
    );
  });
});
