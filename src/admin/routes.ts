import { callerEvent } from "../http/audit";
import { byIdErrors, routesOf } from "../http/endpoint";
import { UserSchema } from "../identity/schemas";
import { createToken, listTokens, revokeToken, tokenCreateEvent } from "../identity/tokens";
import { createUser, listUsers } from "../identity/users";
import { EraseRequestSchema, ErasureSummarySchema } from "./erase-schemas";
import { eraseUser, refuseSelfErase } from "./erase-service";
import {
  CreatedTokenSchema,
  CreateTokenRequestSchema,
  CreateUserRequestSchema,
  TokenIdParamSchema,
  TokenListSchema,
  UserIdParamSchema,
  UserListSchema,
} from "./schemas";

const route = routesOf(["Administration"]);

route("admin", "GET /v1/api/admin/users", "List the workspace's users", {
  responses: { 200: [UserListSchema, "The users"] },
}).handle(async (c) => c.json({ users: await listUsers(c.env, c.var.caller.workspace.id) }, 200));

route("admin", "POST /v1/api/admin/users", "Add a user to the workspace", {
  body: CreateUserRequestSchema,
  responses: { 201: [UserSchema, "The new user"], 400: "Invalid request", 409: "Email already registered" },
}).handle(async (c) => {
  const body = c.req.valid("json");
  const user = await createUser(c.env, c.var.caller.workspace.id, body, (u) =>
    callerEvent(c, {
      kind: "user.create",
      target: `user:${u.id}`,
      subjectUserId: u.id,
      details: { email: u.email, name: u.name, role: u.role },
    }),
  );
  return c.json(user, 201);
});

route("admin", "POST /v1/api/admin/tokens", "Issue a personal access token", {
  description:
    "`user_id` defaults to the caller. Scopes beyond that user's role are refused. The secret is shown once.",
  body: CreateTokenRequestSchema,
  responses: {
    201: [CreatedTokenSchema, "The token, with its secret"],
    400: "Invalid request or scopes beyond the user's role",
    404: "User not in this workspace",
  },
}).handle(async (c) => {
  const body = c.req.valid("json");
  const caller = c.var.caller;
  const { token, info } = await createToken(
    c.env,
    caller.workspace.id,
    {
      userId: body.user_id ?? caller.userId,
      name: body.name,
      scopes: body.scopes,
      expiresInDays: body.expires_in_days,
    },
    (t) => callerEvent(c, tokenCreateEvent(t)),
  );
  const { last_used_at: _l, revoked_at: _r, ...created } = info;
  return c.json({ ...created, token }, 201);
});

route("admin", "GET /v1/api/admin/tokens", "List the workspace's personal access tokens (never their secrets)", {
  responses: { 200: [TokenListSchema, "The tokens"] },
}).handle(async (c) => c.json({ tokens: await listTokens(c.env, c.var.caller.workspace.id) }, 200));

route("admin", "DELETE /v1/api/admin/tokens/{id}", "Revoke a personal access token", {
  params: TokenIdParamSchema,
  responses: { 204: "Revoked", ...byIdErrors("token") },
}).handle(async (c) => {
  await revokeToken(c.env, c.var.caller.workspace.id, c.req.valid("param").id, (t) =>
    callerEvent(c, {
      kind: "token.revoke",
      target: `token:${t.id}`,
      subjectUserId: t.user_id,
      details: { name: t.name, user_id: t.user_id },
    }),
  );
  return c.body(null, 204);
});

route("admin", "POST /v1/admin/users/{id}/erase", "Erase a user of the workspace", {
  description:
    "Revokes the user's credentials, removes their data in every area, redacts their personal data in the audit log (the chain still verifies) and anonymizes the user. Self-erase is refused here; use POST /v1/api/me/erase.",
  params: UserIdParamSchema,
  body: EraseRequestSchema,
  responses: {
    200: [ErasureSummarySchema, "The erasure summary"],
    400: "Self-erase, or the request is not confirmed",
    404: "User not in this workspace",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  c.req.valid("json");
  refuseSelfErase(c.var.caller.userId, id);
  const summary = await eraseUser(c.env, c.var.areas.eraseSteps, c.var.caller.workspace.id, id, { self: false }, (s) =>
    callerEvent(c, { kind: "user.erase", target: `user:${id}`, details: { counts: s.counts, self: false } }),
  );
  return c.json(summary, 200);
});

export const adminRouter = route.router;
