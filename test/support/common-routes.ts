import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { CreatedTokenSchema } from "../../src/admin/schemas";
import { publishApp } from "../../src/apps/service";
import { GRANTABLE_SCOPES, type Scope } from "../../src/auth/scopes";
import { ADMIN_ROLE } from "../../src/http/route";
import { rememberFact } from "../../src/memory/service";
import { createAgent } from "./agents";
import { call, expectProblem, parse } from "./api";
import { seedConversation, uploadFile } from "./artifacts";
import { factEvent } from "./audit";
import { addUser, signupWorkspace } from "./seed";
import { unique } from "./unique";

/**
 * Checks every route shares, generated from its OpenAPI operation (in the manner of unkey's
 * `runCommonRouteTests`): no credential is refused, a credential without the route's scope
 * or role is refused, and another workspace's resource named in the path is not found.
 */

type MediaTypes = { content?: Record<string, unknown> };
export type Operation = {
  method: string;
  path: string;
  /** `METHOD /path`, as the document spells the path. */
  key: string;
  security?: Record<string, string[]>[];
  responses: Record<string, MediaTypes>;
};

/** Every operation of the served OpenAPI document. */
export async function documentOperations(): Promise<Operation[]> {
  const res = await call("GET", "/v1/openapi.json");
  if (res.status !== 200) throw new Error(`GET /v1/openapi.json: ${res.status}`);
  const doc = (await res.json()) as {
    paths: Record<string, Record<string, Omit<Operation, "method" | "path" | "key">>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      ...op,
      method: method.toUpperCase(),
      path,
      key: `${method.toUpperCase()} ${path}`,
    })),
  );
}

export const BEARER = "bearer";

/**
 * What the operation's `security` asks for: nothing (`[]`), a bearer token with a scope
 * (`admin` is the role), any bearer token, or only other credentials.
 */
export type Guard =
  | { kind: "public" }
  | { kind: "bearer"; scope: Scope | typeof ADMIN_ROLE | null }
  | { kind: "other"; schemes: string[] }
  | { kind: "undeclared" };

export function guardOf(op: Operation): Guard {
  if (op.security === undefined) return { kind: "undeclared" };
  if (op.security.length === 0) return { kind: "public" };
  const bearer = op.security.find((req) => BEARER in req);
  if (!bearer) return { kind: "other", schemes: op.security.flatMap((req) => Object.keys(req)) };
  return { kind: "bearer", scope: (bearer[BEARER]![0] as Scope | typeof ADMIN_ROLE | undefined) ?? null };
}

export type Workspace = Awaited<ReturnType<typeof signupWorkspace>>;

/**
 * The tenant resources a path parameter can name, each made in a workspace the way
 * test/support already makes it (through the API or the owning service), returning the
 * value that goes into the path.
 */
export const TENANT_SEEDERS = {
  agent: async (ws: Workspace) =>
    (await createAgent(ws.adminToken, { slug: `cr-${unique()}`, display_name: "Common" })).id,
  agentSlug: async (ws: Workspace) =>
    (await createAgent(ws.adminToken, { slug: `cr-${unique()}`, display_name: "Common" })).slug,
  user: async (ws: Workspace) => (await addUser(ws.adminToken, "member", ["agents:read"])).user.id,
  token: async (ws: Workspace) => {
    const res = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { name: "common routes", scopes: ["agents:read"] },
    });
    return (await parse(res, CreatedTokenSchema)).id;
  },
  conversation: (ws: Workspace) => seedConversation(ws.workspace.id, ws.user.id),
  artifact: async (ws: Workspace) => {
    const conversation = await seedConversation(ws.workspace.id, ws.user.id);
    const res = await uploadFile(ws.adminToken, conversation, { name: "common.txt", content: "common" });
    if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  },
  fact: async (ws: Workspace) => {
    const owner = { workspaceId: ws.workspace.id, userId: ws.user.id };
    const assistant = { slug: "assistant", handles: ["assistant"] };
    return (await rememberFact(env, owner, assistant, "A common fact", factEvent(owner)))!.id;
  },
  // Apps are published by the runtime's tool, so the owning service makes one.
  app: async (ws: Workspace) => {
    const app = await publishApp(
      env,
      {
        workspaceId: ws.workspace.id,
        title: "Common app",
        visibility: "public",
        conversationId: null,
        creatorUserId: ws.user.id,
        agentId: null,
        files: [{ path: "index.html", contentType: "text/html; charset=utf-8", bytes: new TextEncoder().encode("hi") }],
      },
      (a) => ({
        workspaceId: ws.workspace.id,
        kind: "app.publish",
        actor: { kind: "system", id: null },
        target: `app:${a.id}`,
      }),
    );
    return app.id;
  },
  emailEndpoint: async (ws: Workspace) => {
    const res = await call("POST", "/v1/api/email/endpoints", {
      token: ws.adminToken,
      body: { localpart: `cr${unique()}` },
    });
    if (res.status !== 201) throw new Error(`endpoint failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  },
  customMcp: async (ws: Workspace) => {
    const slug = `cr${unique()}`;
    const res = await call("POST", "/v1/mcp/custom", {
      token: ws.adminToken,
      body: { slug, name: "Common", url: "https://common.test/mcp" },
    });
    if (res.status !== 201) throw new Error(`custom MCP failed: ${res.status} ${await res.text()}`);
    return `t:${slug}`;
  },
  connector: async (ws: Workspace) => {
    const res = await call("POST", "/v1/mcp/connectors", { token: ws.adminToken, body: { name: "Common" } });
    if (res.status !== 201) throw new Error(`connector failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { connector_id: string }).connector_id;
  },
} satisfies Record<string, (ws: Workspace) => Promise<string>>;
export type TenantResource = keyof typeof TENANT_SEEDERS;

/** Two workspaces and the credentials the checks need, made once per test file. */
export class CommonRouteFixture {
  A!: Workspace;
  B!: Workspace;
  private readonly tokens = new Map<string, Promise<string>>();
  private readonly seeded = new Map<TenantResource, Promise<string>>();

  async setup(): Promise<void> {
    [this.A, this.B] = await Promise.all([signupWorkspace(), signupWorkspace()]);
  }

  /**
   * A valid token of workspace A that lacks `scope` and holds every other grantable scope:
   * for `admin` (or the admin role, `role:admin`), a member's token (a member's role caps it below admin); otherwise the
   * admin's token without that one scope.
   */
  tokenWithout(scope: Scope | typeof ADMIN_ROLE): Promise<string> {
    let token = this.tokens.get(scope);
    if (!token) {
      const others = GRANTABLE_SCOPES.filter((s) => s !== scope && (scope !== ADMIN_ROLE || s !== "admin"));
      token =
        scope === "admin" || scope === ADMIN_ROLE
          ? addUser(this.A.adminToken, "member", others).then((m) => m.token)
          : issueTokenFor(this.A, others);
      this.tokens.set(scope, token);
    }
    return token;
  }

  /** Workspace A's resource of this kind (one per file, shared by every route naming it). */
  resourceOfA(kind: TenantResource): Promise<string> {
    let id = this.seeded.get(kind);
    if (!id) {
      id = TENANT_SEEDERS[kind](this.A);
      this.seeded.set(kind, id);
    }
    return id;
  }
}

async function issueTokenFor(ws: Workspace, scopes: Scope[]): Promise<string> {
  const res = await call("POST", "/v1/api/admin/tokens", {
    token: ws.adminToken,
    body: { user_id: ws.user.id, name: "common routes", scopes },
  });
  return (await parse(res, CreatedTokenSchema)).token;
}

/** A well-formed id that names nothing, for paths whose guard must answer before any lookup. */
const PLACEHOLDER = "0190f5e2-7c1a-7000-8000-000000000000";

export const pathParams = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
const fill = (path: string, value: (name: string) => string) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(value(name)));

/** The refusal in the shape the operation declares for `status`: a problem, OAuth's `{ error }` or OpenAI's. */
async function expectDeclared(
  op: Operation,
  res: Response,
  status: number,
): Promise<{ code?: string; error?: string }> {
  const declared = Object.keys(op.responses[String(status)]?.content ?? {});
  if (declared.includes("application/problem+json")) return expectProblem(res, status);
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(declared, `${op.key} does not document ${status}`).toContain("application/json");
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error?: string | { code?: string } };
  // OpenAI's shape on the OpenAI-compatible routes: `{ error: { message, type, code, param } }`.
  if (typeof body.error === "object") return { code: body.error.code };
  expect(typeof body.error, text).toBe("string");
  return body as { error?: string };
}

export type Request = { body?: unknown; rawBody?: BodyInit; headers?: Record<string, string> };

export type CommonRouteOptions = {
  /** Where a path parameter names a tenant resource: which kind, so another workspace's one is tried. */
  tenant?: { param: string; kind: TenantResource; request?: (fixture: CommonRouteFixture) => Request };
};

/**
 * The generated checks for one bearer-guarded operation. A route that takes other
 * credentials, or none, is the caller's to skip (with its reason).
 */
export function runCommonRouteTests(op: Operation, fixture: CommonRouteFixture, options: CommonRouteOptions = {}) {
  const guard = guardOf(op);
  if (guard.kind !== "bearer") throw new Error(`${op.key} is not bearer-guarded (${guard.kind})`);
  const placeholderPath = fill(op.path, () => PLACEHOLDER);
  // The spec's PAT-only ask route answers a missing token with 403, and documents no 401.
  const refusal = "401" in op.responses ? 401 : 403;

  it(`${op.key}: ${refusal} without a token or with an unknown one`, async () => {
    const none = await call(op.method, placeholderPath);
    await expectDeclared(op, none, refusal);
    expect(none.headers.get("WWW-Authenticate")).toMatch(/^Bearer\b/);
    const unknown = await call(op.method, placeholderPath, { token: `svc_pat_${"x".repeat(43)}` });
    await expectDeclared(op, unknown, refusal);
  });

  const scope = guard.scope;
  if (scope) {
    const byRole = scope === "admin" || scope === ADMIN_ROLE;
    const who = byRole ? "a member's token" : `a token without ${scope}`;
    // "Admin-only endpoints return 403 when the caller lacks the admin role."
    it(`${op.key}: 403 with ${who}`, async () => {
      const res = await call(op.method, placeholderPath, { token: await fixture.tokenWithout(scope) });
      const body = await expectDeclared(op, res, 403);
      expect(body.code).toBe(byRole ? "admin_required" : "insufficient_scope");
    });
  }

  const tenant = options.tenant;
  if (tenant) {
    // "Cross-workspace access returns 404 (not 403) where an endpoint says so."
    it(`${op.key}: 404 for workspace A's ${tenant.kind} with B's token`, async () => {
      const id = await fixture.resourceOfA(tenant.kind);
      const path = fill(op.path, (name) => (name === tenant.param ? id : PLACEHOLDER));
      const res = await call(op.method, path, { token: fixture.B.adminToken, ...tenant.request?.(fixture) });
      await expectDeclared(op, res, 404);
    });
  }
}
