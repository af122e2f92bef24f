import { z } from "@hono/zod-openapi";
import { SCOPES } from "../auth/scopes";
import { EmailSchema, PasswordSchema, UserSchema } from "../identity/schemas";

export const WorkspaceSchema = z.object({ id: z.uuid(), name: z.string(), slug: z.string() }).openapi("Workspace");

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

export const SelfEraseRequestSchema = z
  .object({
    confirm: z.literal(true, { error: "confirm must be true" }),
    password: z.string().min(1).max(256).optional().openapi({
      description:
        "The account password. It may be left out only when the request comes with a sign-in session (cookie) younger than 10 minutes.",
    }),
    reason: z.string().max(500).optional(),
  })
  .strict()
  .openapi("SelfEraseRequest");
