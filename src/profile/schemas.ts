import { z } from "@hono/zod-openapi";
import { SIZE_HINTS } from "./enrich";

export const CRAWL_STATUSES = ["never", "pending", "ok", "error"] as const;
/** The fields an admin may override; each also has a discovered value. */
export const OVERRIDABLE_FIELDS = [
  "summary",
  "palette",
  "fonts",
  "logo_url",
  "industry",
  "segment",
  "size_hint",
] as const;
export type OverridableField = (typeof OVERRIDABLE_FIELDS)[number];

export const TechnologySchema = z
  .object({
    name: z.string().openapi({ example: "WordPress" }),
    confidence: z.number().min(0).max(1).openapi({ example: 0.95 }),
  })
  .openapi("BusinessTechnology");
export type Technology = z.infer<typeof TechnologySchema>;

const SourceSchema = z
  .object({
    url: z.string().openapi({ description: "The page, stylesheet or manifest the value was read from" }),
    fetched_at: z.iso.datetime(),
  })
  .openapi("BusinessProfileSource");

const sourceField = SourceSchema.optional();

export const BusinessProfileSchema = z
  .object({
    domain: z
      .string()
      .nullable()
      .openapi({ description: "Normalized domain; null until an admin sets one", example: "acme.com" }),
    summary: z.string().nullable(),
    palette: z
      .array(z.string())
      .openapi({ description: "At most 6 colours as `#rrggbb`", example: ["#0f766e", "#f59e0b"] }),
    fonts: z.array(z.string()).openapi({ example: ["Inter", "Playfair Display"] }),
    logo_url: z.string().nullable().openapi({ description: "Absolute URL" }),
    crawl_status: z.enum(CRAWL_STATUSES).openapi({
      description:
        "`never` (no domain), `pending` (a crawl of a new domain is queued), `ok` or `error` (the last crawl)",
    }),
    last_error: z
      .string()
      .nullable()
      .openapi({ description: "Why the last crawl failed; null unless `crawl_status` is `error`" }),
    crawled_at: z.iso.datetime().nullable().openapi({ description: "When the last crawl finished" }),
    enrichment: z.object({
      industry: z.string().nullable(),
      segment: z.string().nullable(),
      size_hint: z.enum(SIZE_HINTS).nullable(),
    }),
    technologies: z.array(TechnologySchema).openapi({ description: "Most confident first" }),
    overridden_fields: z.array(z.enum(OVERRIDABLE_FIELDS)).openapi({
      description: "Fields whose value is the admin's override rather than the crawl's",
    }),
    sources: z
      .object({
        summary: sourceField,
        palette: sourceField,
        fonts: sourceField,
        logo_url: sourceField,
        industry: sourceField,
        segment: sourceField,
        size_hint: sourceField,
        technologies: sourceField,
      })
      .openapi({ description: "For each field with a discovered value: where and when the crawl found it" }),
  })
  .openapi("BusinessProfile");
export type BusinessProfile = z.infer<typeof BusinessProfileSchema>;

const HEX = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

export const BusinessProfileUpdateSchema = z
  .object({
    domain: z.string().max(2048).nullable().optional().openapi({
      description:
        "The business's website. Normalized (scheme, path, port and `www.` dropped, IDNA to ASCII); a new value queues a crawl. Null removes it.",
      example: "https://www.acme.com/about",
    }),
    summary: z.string().trim().min(1).max(1000).nullable().optional(),
    palette: z
      .array(z.string().regex(HEX, "must be a hex colour like #0f766e"))
      .max(6)
      .nullable()
      .optional()
      .openapi({ description: "At most 6 hex colours (`#rgb` or `#rrggbb`)" }),
    fonts: z.array(z.string().trim().min(1).max(100)).max(6).nullable().optional(),
    logo_url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .nullable()
      .optional()
      .openapi({ description: "Absolute http(s) URL" }),
    industry: z.string().trim().min(1).max(100).nullable().optional(),
    segment: z.string().trim().min(1).max(100).nullable().optional(),
    size_hint: z.enum(SIZE_HINTS).nullable().optional(),
  })
  .strict()
  .openapi("BusinessProfileUpdate", {
    description:
      "Each field present sets an override (the domain: the site); `null` clears it; an absent field is left as it is.",
  });
export type BusinessProfileUpdate = z.infer<typeof BusinessProfileUpdateSchema>;
