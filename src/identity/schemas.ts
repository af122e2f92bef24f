import { z } from "@hono/zod-openapi";
import { ROLES } from "../auth/scopes";

export const EmailSchema = z
  .email()
  .max(254)
  .transform((s) => s.trim().toLowerCase());
export const PasswordSchema = z.string().min(10, "password must be at least 10 characters").max(256);

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
