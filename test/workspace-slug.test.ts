import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuditListSchema } from "../src/audit-log/schemas";
import { AvailabilitySchema, RenameResultSchema } from "../src/workspace/schemas";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { addUser, issueToken, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

/** A free workspace slug (slugs start with a letter). */
const freeSlug = () => `h${unique()}`;

describe("GET /v1/api/admin/workspace/slug/available", () => {
  it.each([
    ["UPPER", "invalid"],
    ["a", "invalid"],
    ["-lead", "invalid"],
    ["trail-", "invalid"],
    ["dou--ble", "invalid"],
    ["x".repeat(33), "invalid"],
    ["spa ce", "invalid"],
    ["admin", "reserved"],
    ["api", "reserved"],
    ["www", "reserved"],
    ["support", "reserved"],
    ["signin", "reserved"],
  ])("says %s is not available: %s", async (slug, reason) => {
    const ws = await signupWorkspace();
    const res = await call("GET", `/v1/api/admin/workspace/slug/available?slug=${encodeURIComponent(slug)}`, {
      token: ws.adminToken,
    });
    expect(await parse(res, AvailabilitySchema)).toEqual({ slug, available: false, reason });
  });

  // spec: "`GET /v1/api/admin/workspace/slug/available` | any valid token | ... Advisory only. Response: availability verdict" — 200
  it("answers any candidate with a verdict: an empty or over-long one is invalid, whatever length the URL carries", async () => {
    const ws = await signupWorkspace();
    for (const slug of ["", "x".repeat(101), "a".repeat(8000), "é".repeat(2000)]) {
      const res = await call("GET", `/v1/api/admin/workspace/slug/available?slug=${encodeURIComponent(slug)}`, {
        token: ws.adminToken,
      });
      expect(await parse(res, AvailabilitySchema)).toEqual({ slug, available: false, reason: "invalid" });
    }
  });

  it("says taken for another workspace's handle and available for a free one, to any member", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    const member = await addUser(a.adminToken, "member", ["agents:read"]);
    const taken = await parse(
      await call("GET", `/v1/api/admin/workspace/slug/available?slug=${b.workspace.slug}`, { token: member.token }),
      AvailabilitySchema,
    );
    expect(taken).toEqual({ slug: b.workspace.slug, available: false, reason: "taken" });
    const free = freeSlug();
    expect(
      await parse(
        await call("GET", `/v1/api/admin/workspace/slug/available?slug=${free}`, { token: member.token }),
        AvailabilitySchema,
      ),
    ).toEqual({ slug: free, available: true });
    await expectProblem(await call("GET", "/v1/api/admin/workspace/slug/available", { token: member.token }), 400);
    await expectProblem(await call("GET", `/v1/api/admin/workspace/slug/available?slug=${free}`), 401);
  });
});

describe("POST /v1/api/admin/workspace/slug", () => {
  it("renames the handle, re-aliases the email slug and keeps the old one routing for 30 days", async () => {
    const ws = await signupWorkspace();
    const next = freeSlug();
    const res = await call("POST", "/v1/api/admin/workspace/slug", { token: ws.adminToken, body: { slug: next } });
    const result = await parse(res, RenameResultSchema);
    expect(result).toMatchObject({ slug: next, previous_slug: ws.workspace.slug, email_slug: next });
    const days = (Date.parse(result.previous_email_slug_routes_until) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    const me = (await (await call("GET", "/v1/api/me", { token: ws.adminToken })).json()) as {
      workspace: { slug: string };
    };
    expect(me.workspace.slug).toBe(next);
    const routes = await env.DB.prepare(
      "SELECT slug, workspace_id, routes_until FROM email_slugs WHERE workspace_id = ? ORDER BY created_at",
    )
      .bind(ws.workspace.id)
      .all();
    expect(routes.results.map((r) => r.slug).sort()).toEqual([ws.workspace.slug, next].sort());

    // The old handle stays unavailable to others during the window...
    const other = await signupWorkspace();
    const verdict = await parse(
      await call("GET", `/v1/api/admin/workspace/slug/available?slug=${ws.workspace.slug}`, {
        token: other.adminToken,
      }),
      AvailabilitySchema,
    );
    expect(verdict).toMatchObject({ available: false, reason: "taken" });
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", {
        token: other.adminToken,
        body: { slug: ws.workspace.slug },
      }),
      400,
      "taken",
    );
    // ...but its owner may take it back.
    expect(
      (await call("POST", "/v1/api/admin/workspace/slug", { token: ws.adminToken, body: { slug: ws.workspace.slug } }))
        .status,
    ).toBe(200);

    const audit = await parse(
      await call("GET", "/v1/admin/audit?kind=workspace.slug", { token: ws.adminToken }),
      AuditListSchema,
    );
    expect(audit.total).toBe(2);
  });

  it("frees a retired handle once its window has passed", async () => {
    const ws = await signupWorkspace();
    const old = ws.workspace.slug;
    await call("POST", "/v1/api/admin/workspace/slug", { token: ws.adminToken, body: { slug: freeSlug() } });
    await env.DB.prepare("UPDATE email_slugs SET routes_until = ? WHERE slug = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), old)
      .run();
    const other = await signupWorkspace();
    expect(
      (await call("POST", "/v1/api/admin/workspace/slug", { token: other.adminToken, body: { slug: old } })).status,
    ).toBe(200);
  });

  it("refuses invalid, reserved and taken handles with 400 and members with 403", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", { token: a.adminToken, body: { slug: "Bad Slug" } }),
      400,
      "invalid",
    );
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", { token: a.adminToken, body: { slug: "billing" } }),
      400,
      "reserved",
    );
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", { token: a.adminToken, body: { slug: b.workspace.slug } }),
      400,
      "taken",
    );
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", { token: a.adminToken, body: { slug: 7 } }),
      400,
      "validation_failed",
    );
    const member = await addUser(a.adminToken, "member", ["agents:read"]);
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", { token: member.token, body: { slug: freeSlug() } }),
      403,
      "admin_required",
    );
  });

  // spec: "`POST /v1/api/admin/workspace/slug` | any valid token (no scope listed; admin action)"
  it("lets an admin rename with a token of any scope, not only `admin`; a member is still refused and recorded", async () => {
    const ws = await signupWorkspace();
    const narrow = await issueToken(ws.adminToken, ws.user.id, ["agents:read"]);
    const next = unique();
    const renamed = await parse(
      await call("POST", "/v1/api/admin/workspace/slug", { token: narrow, body: { slug: next } }),
      RenameResultSchema,
    );
    expect(renamed).toMatchObject({ slug: next, previous_slug: ws.workspace.slug });
    const [event] = await auditEvents(ws.workspace.id, "workspace.slug");
    expect(event).toMatchObject({ outcome: "success", actor_id: ws.user.id, target: `workspace:${ws.workspace.id}` });

    const member = await addUser(ws.adminToken, "member", ["agents:read", "memory:write"]);
    await expectProblem(
      await call("POST", "/v1/api/admin/workspace/slug", { token: member.token, body: { slug: unique() } }),
      403,
      "admin_required",
    );
    expect((await auditEvents(ws.workspace.id, "access.denied")).map((e) => [e.actor_id, e.target])).toEqual([
      [member.user.id, "route:POST /v1/api/admin/workspace/slug"],
    ]);
    expect((await auditEvents(ws.workspace.id, "workspace.slug")).length).toBe(1);

    // the document says so: the admin role, no scope
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { security?: unknown }>>;
    };
    expect(doc.paths["/v1/api/admin/workspace/slug"]?.post?.security).toEqual([{ bearer: ["role:admin"] }]);
  });

  it("lets exactly one of two racing workspaces take a handle; the other gets 400 taken", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    const wanted = freeSlug();
    const [ra, rb] = await Promise.all([
      call("POST", "/v1/api/admin/workspace/slug", { token: a.adminToken, body: { slug: wanted } }),
      call("POST", "/v1/api/admin/workspace/slug", { token: b.adminToken, body: { slug: wanted } }),
    ]);
    const statuses = [ra.status, rb.status].sort();
    expect(statuses).toEqual([200, 400]);
    const loser = ra.status === 400 ? ra : rb;
    await expectProblem(loser, 400, "taken");
    const owners = await env.DB.prepare("SELECT id FROM workspaces WHERE slug = ?").bind(wanted).all();
    expect(owners.results).toHaveLength(1);
  });
});
