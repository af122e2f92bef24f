import { ErasureSummarySchema } from "../admin/erase-schemas";
import { eraseUser } from "../admin/erase-service";
import { auditDenied, callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { rateLimit } from "../http/rate-limit";
import { reauthenticated } from "../identity/sessions";
import { ApiError } from "../platform/problem";
import { MeSchema, SelfEraseRequestSchema, SignupRequestSchema, SignupResponseSchema } from "./schemas";
import { signup } from "./service";

const route = routesOf(["Account"]);

route(
  "public",
  "POST /v1/api/signup",
  "Create a workspace with its first admin",
  {
    description:
      "Creates the workspace, its admin user, its default agent and an admin personal access token (shown once).",
    body: SignupRequestSchema,
    responses: {
      201: [SignupResponseSchema, "The new workspace, its admin and the admin token"],
      400: "Invalid request",
      403: "Sign-up is closed",
      409: "Email already registered",
      429: "Rate limited",
    },
  },
  { middleware: [rateLimit("SIGNUP_LIMITER")] },
).handle(async (c) => {
  if (c.env.SIGNUP_MODE === "closed") throw new ApiError(403, "signup_closed", "Sign-up is closed on this service");
  const body = c.req.valid("json");
  const result = await signup(
    c.env,
    { workspaceName: body.workspace_name, email: body.email, password: body.password, name: body.name },
    ({ workspace, user }) =>
      callerEvent(c, {
        kind: "workspace.signup",
        workspaceId: workspace.id,
        actor: { kind: "user", id: user.id },
        target: `workspace:${workspace.id}`,
        intent: "create",
        subjectUserId: user.id,
        details: { workspace_name: workspace.name, slug: workspace.slug, email: user.email, name: user.name },
      }),
  );
  return c.json(result, 201);
});

route("authenticated", "GET /v1/api/me", "The caller's identity", {
  session: true,
  responses: { 200: [MeSchema, "The caller, its workspace and its effective scopes"] },
}).handle((c) => {
  const caller = c.var.caller;
  return c.json(
    {
      user: { id: caller.userId, email: caller.email, name: caller.name, role: caller.role },
      workspace: caller.workspace,
      scopes: [...caller.scopes].sort(),
      auth: caller.auth,
    },
    200,
  );
});

route(
  "authenticated",
  "POST /v1/api/me/erase",
  "Erase your own account",
  {
    session: true,
    description:
      "Same erasure as the admin route, for the caller. Whatever credential calls it, the caller re-authenticates: `password` is the account password, and may be left out only with a sign-in session (cookie) younger than 10 minutes; otherwise 403 `reauthentication_required`, so a token alone (an integration's read-only PAT) can never erase its user. A session request from another origin is refused (403 `cross_origin_request`). The last admin of a workspace is refused (400). Rate limited per client address like sign-in (20 requests a minute).",
    body: SelfEraseRequestSchema,
    responses: {
      200: [ErasureSummarySchema, "The erasure summary"],
      400: "Not confirmed, or the caller is the workspace's last admin",
      403: "`reauthentication_required`: no password, a wrong one, and no sign-in session younger than 10 minutes; `cross_origin_request`: a session request from another origin",
      429: "Rate limited",
    },
  },
  { middleware: [rateLimit("SIGNIN_LIMITER")] },
).handle(async (c) => {
  const body = c.req.valid("json");
  const caller = c.var.caller;
  const who = { ...caller, workspaceId: caller.workspace.id };
  if (!(await reauthenticated(c.env, who, body.password))) {
    await auditDenied(c, "reauthenticate");
    throw new ApiError(
      403,
      "reauthentication_required",
      "Erasing your account needs your password (or a sign-in session younger than 10 minutes)",
    );
  }
  const summary = await eraseUser(
    c.env,
    c.var.areas.eraseSteps,
    caller.workspace.id,
    caller.userId,
    { self: true },
    (s) =>
      callerEvent(c, {
        kind: "user.erase",
        target: `user:${caller.userId}`,
        details: { counts: s.counts, self: true },
      }),
  );
  return c.json(summary, 200);
});

export const accountRouter = route.router;
