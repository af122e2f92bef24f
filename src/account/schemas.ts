import { z } from "@hono/zod-openapi";
import { ROLES, SCOPES } from "../auth/scopes";

export const EmailSchema = z
  .email()
  .max(254)
  .transform((s) => s.trim().toLowerCase());
export const PasswordSchema = z.string().min(10, "password must be at least 10 characters").max(256);

export const WorkspaceSchema = z.object({ id: z.uuid(), name: z.string(), slug: z.string() }).openapi("Workspace");
export const UserSchema = z
  .object({
    id: z.uuid(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    role: z.enum(ROLES),
    created_at: z.iso.datetime().optional(),
  })
  .openapi("User");
export type User = z.infer<typeof UserSchema>;

export const SignupRequestSchema = z
  .object({
    workspace_name: z.string().trim().min(1).max(100),
    email: EmailSchema,
    password: PasswordSchema,
    name: z.string().trim().min(1).max(100).optional(),
  })
  .strict()
  .openapi("SignupRequest");

export const SignupResponseSchema = z
  .object({
    workspace: WorkspaceSchema,
    user: UserSchema,
    token: z.string().openapi({ description: "Admin personal access token (svc_pat_…), shown once" }),
  })
  .openapi("SignupResponse");

export const MeSchema = z
  .object({
    user: UserSchema,
    workspace: WorkspaceSchema,
    scopes: z.array(z.enum(SCOPES)),
    auth: z.enum(["pat", "oauth", "session"]),
  })
  .openapi("Me");
