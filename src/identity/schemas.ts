import { z } from "@hono/zod-openapi";
import { ROLES } from "../auth/scopes";

/**
 * The one definition of a valid email address: a dot-separated local part of letters, digits
 * and `_ ' + -`, and a domain of DNS labels ending in a top-level label of two or more letters
 * (`ada@acme.test`, never `0@com`). The server validates with it and the document publishes
 * it as the `pattern` beside `format: email`, so a client reading the document accepts
 * exactly what the server does.
 */
export const EMAIL_PATTERN =
  /^[A-Za-z0-9_'+-]+(?:\.[A-Za-z0-9_'+-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/;

export const EmailSchema = z
  .string()
  .max(254)
  .regex(EMAIL_PATTERN, "must be an email address such as ada@acme.test")
  .transform((s) => s.toLowerCase())
  .openapi({ format: "email" });
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
