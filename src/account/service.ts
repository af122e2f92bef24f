import { defaultAgentInserts } from "../agents/service";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { DEFAULT_GRANT } from "../auth/scopes";
import { emailSlugs, workspaces } from "../db/schema";
import { systemEndpointInsert } from "../email/endpoints";
import { patInsert } from "../identity/tokens";
import { userInsert } from "../identity/users";
import { hashPassword } from "../platform/crypto";
import { db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { conflict } from "../platform/problem";
import { handleFromName, withSuffix } from "../workspace/handle";

export type SignupInput = { workspaceName: string; email: string; password: string; name?: string };
export type SignupResult = {
  workspace: { id: string; name: string; slug: string };
  user: { id: string; email: string; name: string | null; role: "admin" };
  token: string;
};

/**
 * Creates a workspace, its first admin, its default agent and an admin PAT in one D1 batch
 * (all or nothing). A taken handle is retried with a random suffix; a taken email is 409.
 */
export async function signup(
  env: Env,
  input: SignupInput,
  eventOf: (result: Omit<SignupResult, "token">) => AuditEventInput,
): Promise<SignupResult> {
  const d = db(env);
  const passwordHash = await hashPassword(input.password);
  let slug = handleFromName(input.workspaceName);
  for (let attempt = 0; ; attempt++) {
    const now = nowIso();
    const workspace = { id: newId(), name: input.workspaceName, slug, emailSlug: slug, createdAt: now };
    const user = {
      id: newId(),
      workspaceId: workspace.id,
      email: input.email,
      name: input.name ?? null,
      role: "admin" as const,
      passwordHash,
      createdAt: now,
    };
    const pat = patInsert(d, {
      workspaceId: workspace.id,
      userId: user.id,
      name: "Signup admin token",
      scopes: DEFAULT_GRANT,
      expiresAt: null,
    });
    const created = {
      workspace: { id: workspace.id, name: workspace.name, slug },
      user: { id: user.id, email: user.email, name: user.name, role: "admin" as const },
    };
    try {
      await d.batch([
        d.insert(workspaces).values(workspace),
        d.insert(emailSlugs).values({ slug, workspaceId: workspace.id, createdAt: now }),
        userInsert(d, user),
        ...defaultAgentInserts(d, workspace.id, now),
        pat.statement,
        systemEndpointInsert(d, workspace.id, now),
        auditInBatch(env, eventOf(created)),
      ]);
      return { ...created, token: pat.token };
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      if (/users\.email/.test(String(e)) || /users\.email/.test(String((e as { cause?: unknown }).cause))) {
        throw conflict("email_taken", "An account with this email already exists");
      }
      if (attempt >= 4) throw e;
      slug = withSuffix(handleFromName(input.workspaceName));
    }
  }
}
