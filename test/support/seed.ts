import { SignupResponseSchema } from "../../src/account/schemas";
import { CreatedTokenSchema } from "../../src/admin/schemas";
import type { Scope } from "../../src/auth/scopes";
import { UserSchema } from "../../src/identity/schemas";
import { call, parse } from "./api";
import { unique } from "./unique";

export const PASSWORD = "correct horse battery";

/** Signs up a fresh workspace; returns its admin and the admin PAT. */
export async function signupWorkspace(name = `Acme ${unique()}`) {
  const email = `admin-${unique()}@example.com`;
  const res = await call("POST", "/v1/api/signup", {
    body: { workspace_name: name, email, password: PASSWORD, name: "Ada Admin" },
  });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${await res.text()}`);
  const body = await parse(res, SignupResponseSchema);
  return { ...body, email, adminToken: body.token };
}

/** Adds a user to the admin's workspace and issues a PAT for them with the given scopes. */
export async function addUser(adminToken: string, role: "admin" | "member", scopes: Scope[]) {
  const email = `${role}-${unique()}@example.com`;
  const res = await call("POST", "/v1/api/admin/users", {
    token: adminToken,
    body: { email, role, password: PASSWORD, name: `${role} user` },
  });
  if (res.status !== 201) throw new Error(`create user failed: ${res.status} ${await res.text()}`);
  const user = await parse(res, UserSchema);
  const token = await issueToken(adminToken, user.id, scopes);
  return { user, email, token };
}

export async function issueToken(adminToken: string, userId: string, scopes: Scope[], name = "test token") {
  const res = await call("POST", "/v1/api/admin/tokens", {
    token: adminToken,
    body: { user_id: userId, name, scopes },
  });
  if (res.status !== 201) throw new Error(`create token failed: ${res.status} ${await res.text()}`);
  return (await parse(res, CreatedTokenSchema)).token;
}
