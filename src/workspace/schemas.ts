import { z } from "@hono/zod-openapi";

// No length bound: every candidate gets a verdict (a malformed one `invalid`), and the URL bounds it.
export const SlugQuerySchema = z.object({
  slug: z.string().openapi({ param: { name: "slug", in: "query" }, description: "The candidate handle" }),
});

export const AvailabilitySchema = z
  .object({ slug: z.string(), available: z.boolean(), reason: z.enum(["invalid", "reserved", "taken"]).optional() })
  .openapi("SlugAvailability");

export const SetSlugRequestSchema = z
  .object({ slug: z.string().max(100) })
  .strict()
  .openapi("SetSlugRequest");

export const RenameResultSchema = z
  .object({
    slug: z.string(),
    previous_slug: z.string(),
    email_slug: z.string(),
    previous_email_slug_routes_until: z.iso.datetime(),
  })
  .openapi("WorkspaceSlugResult");
