import { z } from "@hono/zod-openapi";
import { idPathParams } from "../http/params";
import { blockedHostReason } from "../platform/outbound-rules";

/** A custom integration's own slug (it is offered as `t:<slug>`). */
const SlugSchema = z
  .string()
  .min(1)
  .max(40)
  .regex(/^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/, "1-40 characters: a-z, 0-9 and inner hyphens");

/** Header names as HTTP allows them; the ones the transport sets itself are refused. */
const HeaderNameSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "an HTTP header name")
  .refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()), "set by the transport itself");
export const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "user-agent",
]);

export const CreateCustomSchema = z
  .object({
    slug: SlugSchema,
    name: z.string().min(1).max(100),
    url: z
      .url({ protocol: /^https$/ })
      .max(2000)
      .refine(
        (u) => URL.canParse(u) && blockedHostReason(new URL(u).hostname) === null,
        "a public host (no IP literal, no local name)",
      )
      .openapi({ description: "The server's Streamable HTTP endpoint (https)", example: "https://mcp.acme.com/mcp" }),
    description: z.string().max(1000).optional(),
    headers: z
      .record(HeaderNameSchema, z.string().min(1).max(4000))
      .refine((h) => Object.keys(h).length <= 20, "at most 20 headers")
      .optional()
      .openapi({ description: "Sent on every call (e.g. Authorization); stored encrypted, never returned" }),
  })
  .strict()
  .openapi("McpCustomCreate");
export type CreateCustom = z.infer<typeof CreateCustomSchema>;

export const CustomSchema = z
  .object({
    slug: z.string().openapi({ example: "t:crm" }),
    name: z.string(),
    url: z.url(),
    description: z.string(),
    header_names: z.array(z.string()),
    created_at: z.iso.datetime(),
  })
  .openapi("McpCustom");
export type Custom = z.infer<typeof CustomSchema>;

export const CustomListSchema = z.object({ integrations: z.array(CustomSchema) }).openapi("McpCustomList");

export const CustomSlugParamSchema = z.object({
  slug: z
    .string()
    .min(1)
    .max(42)
    .openapi({ param: { name: "slug", in: "path" }, description: "`t:<slug>` or `<slug>`", example: "t:crm" }),
});

export const CreateConnectorSchema = z
  .object({ name: z.string().min(1).max(100) })
  .strict()
  .openapi("McpConnectorCreate");

export const CreatedConnectorSchema = z
  .object({
    connector_id: z.uuid(),
    enrollment_token: z.string().openapi({ description: "One-time, shown once; redeem within 15 minutes" }),
    expires_at: z.iso.datetime(),
  })
  .openapi("McpConnectorCreated");

export const ConnectorSchema = z
  .object({
    connector_id: z.uuid(),
    name: z.string(),
    status: z.enum(["pending", "enrolled", "revoked"]),
    created_at: z.iso.datetime(),
    enrolled_at: z.iso.datetime().nullable(),
    cert_serial: z.string().nullable(),
    cert_expires_at: z.iso.datetime().nullable(),
  })
  .openapi("McpConnector");

export const ConnectorListSchema = z.object({ connectors: z.array(ConnectorSchema) }).openapi("McpConnectorList");

export const ConnectorIdParamSchema = idPathParams("The connector's id");

export const EnrollRequestSchema = z
  .object({
    csr_pem: z.string().min(1).max(16_384).openapi({ description: "PEM certificate signing request" }),
    token: z
      .string()
      .min(1)
      .max(200)
      .openapi({ description: "The one-time enrollment token; missing, empty or not one we issued is 403" }),
  })
  .strict()
  .openapi("McpConnectorEnroll");

export const EnrollmentResultSchema = z
  .object({
    ca_pem: z.string(),
    cert_pem: z.string(),
    connector_id: z.uuid(),
    tunnel_addr: z.string(),
    tunnel_server_name: z.string(),
  })
  .openapi("McpConnectorEnrollment");
