import { z } from "@hono/zod-openapi";
import { GRANTABLE_SCOPES, ROLES } from "../auth/scopes";
import { idPathParams } from "../http/params";
import { EmailSchema, PasswordSchema, UserSchema } from "../identity/schemas";

export const UserListSchema = z.object({ users: z.array(UserSchema) }).openapi("UserList");

export const CreateUserRequestSchema = z
  .object({
    email: EmailSchema,
    name: z.string().trim().min(1).max(100).optional(),
    password: PasswordSchema.optional(),
    role: z.enum(ROLES),
  })
  .strict()
  .openapi("CreateUserRequest");

export const CreateTokenRequestSchema = z
  .object({
    user_id: z.uuid().optional(),
    name: z.string().trim().min(1).max(100),
    scopes: z
      .array(z.enum(GRANTABLE_SCOPES))
      .min(1)
      .max(GRANTABLE_SCOPES.length)
      .openapi({ description: "Any scopes within the user's role but `svc:computer`, which no token ever carries" }),
    expires_in_days: z.number().int().min(1).max(3650).optional(),
  })
  .strict()
  .openapi("CreateTokenRequest");

const TokenFields = {
  id: z.uuid(),
  name: z.string(),
  scopes: z.array(z.string()),
  user_id: z.uuid(),
  created_at: z.iso.datetime(),
  expires_at: z.iso.datetime().nullable(),
};

export const CreatedTokenSchema = z
  .object({ ...TokenFields, token: z.string().openapi({ description: "The secret (svc_pat_…), shown once" }) })
  .openapi("CreatedToken");

export const TokenSchema = z
  .object({ ...TokenFields, last_used_at: z.iso.datetime().nullable(), revoked_at: z.iso.datetime().nullable() })
  .openapi("Token");
export const TokenListSchema = z.object({ tokens: z.array(TokenSchema) }).openapi("TokenList");

export const TokenIdParamSchema = idPathParams("The token's id");
export const UserIdParamSchema = idPathParams("The user's id");
