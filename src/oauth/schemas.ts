import { z } from "@hono/zod-openapi";
import { GRANTABLE_SCOPES, isGrantable, isScope } from "../auth/scopes";
import { redirectUriProblem } from "./redirect-uris";

export const AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];
export const GRANT_TYPES = ["authorization_code", "refresh_token"] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
export const DEFAULT_CLIENT_NAME = "Unnamed app";

/** `redirect_uris` as registration and client metadata documents both accept them. */
export const RedirectUriListSchema = z
  .array(z.string(), { error: "redirect_uris must be an array of strings" })
  .min(1, "redirect_uris must not be empty")
  .max(20, "at most 20 redirect_uris")
  .superRefine((uris, ctx) => {
    uris.forEach((uri, i) => {
      const problem = redirectUriProblem(uri);
      if (problem) ctx.addIssue({ code: "custom", path: [i], message: `${uri.slice(0, 100)}: ${problem}` });
    });
  });

const RedirectUrisSchema = RedirectUriListSchema.transform((uris) => [...new Set(uris)]).openapi({
  description: "Absolute `https` URIs, or `http` on a loopback host (any port at authorize time). No fragments.",
  example: ["https://app.example/callback"],
});

const ClientNameSchema = z
  .string()
  .max(200)
  .nullish()
  .transform((s) => s?.trim() || DEFAULT_CLIENT_NAME)
  .openapi({
    description: `Shown on the consent screen. Default \`${DEFAULT_CLIENT_NAME}\` when omitted or blank.`,
    type: "string",
  });

const ScopeSchema = z
  .string({ error: "scope is required" })
  .max(1000)
  .transform((s) => [...new Set(s.split(" ").filter(Boolean))])
  .superRefine((scopes, ctx) => {
    if (!scopes.length) ctx.addIssue({ code: "custom", message: "scope must name at least one scope" });
    const unknown = scopes.filter((s) => !isScope(s));
    if (unknown.length) ctx.addIssue({ code: "custom", message: `unknown scopes: ${unknown.join(" ")}` });
    else if (scopes.length && !scopes.some(isGrantable))
      ctx.addIssue({
        code: "custom",
        message: "svc:computer is never granted to an application; ask for another scope",
      });
  })
  // svc:computer is widened for one local-browser turn only, never granted to an application.
  .transform((scopes) => scopes.filter(isGrantable))
  .openapi({
    description: `Space-delimited; every scope known (${GRANTABLE_SCOPES.join(", ")}). \`svc:computer\` is never granted to an application: it is dropped from the registered scopes (alone, it is refused).`,
    type: "string",
    example: "agents:read conversations:read",
  });

/**
 * The grant types a client asks for (RFC 7591 §2: omitted means `authorization_code` only).
 * Every code exchange also issues a rotating refresh token, so the registered value is always
 * both: §3.2.1 lets the server replace a requested value and has the response say what it
 * registered.
 */
const GrantTypesSchema = z
  .array(z.enum(GRANT_TYPES, { error: "grant_types may hold authorization_code and refresh_token only" }))
  .min(1, "grant_types must not be empty")
  .refine((g) => g.includes("authorization_code"), "grant_types must include authorization_code")
  .optional()
  .transform((): GrantType[] => [...GRANT_TYPES])
  .openapi({
    description:
      "`authorization_code` (required) and optionally `refresh_token`; default `[authorization_code]`. Every client receives " +
      "refresh tokens, so the registered (and answered) value is always `[authorization_code, refresh_token]`.",
    type: "array",
    items: { type: "string", enum: [...GRANT_TYPES] },
  });

/** RFC 7591 client metadata. Unknown members are ignored (RFC 7591 §2); `first_party` cannot be set. */
export const RegisterRequestSchema = z
  .object({
    redirect_uris: RedirectUrisSchema,
    client_name: ClientNameSchema,
    token_endpoint_auth_method: z
      .enum(AUTH_METHODS)
      .default("none")
      .openapi({ description: "`none` (public client, PKCE only) or a confidential method" }),
    grant_types: GrantTypesSchema,
    response_types: z
      .array(z.literal("code"))
      .min(1)
      .default(["code"])
      .transform(() => ["code" as const]),
    scope: ScopeSchema,
  })
  .openapi("ClientRegistrationRequest");
export type RegisterRequest = z.infer<typeof RegisterRequestSchema>;

/**
 * RFC 7592 update: replaces the mutable metadata. The immutable members may be echoed
 * (clients send back what they read) but not changed; `grant_types` is judged as at
 * registration, where any valid value registers the same two.
 */
export const UpdateClientRequestSchema = z
  .object({
    redirect_uris: RedirectUrisSchema,
    client_name: ClientNameSchema,
    scope: ScopeSchema,
    client_id: z.string().optional(),
    client_secret: z.string().optional(),
    token_endpoint_auth_method: z.string().optional(),
    grant_types: GrantTypesSchema,
    response_types: z.array(z.string()).optional(),
  })
  .openapi("ClientUpdateRequest");
export type UpdateClientRequest = z.infer<typeof UpdateClientRequestSchema>;

export const ClientInfoSchema = z
  .object({
    client_id: z.string().openapi({ example: "svc_client_0190f0b8e4c87c3a9d1e2f3a4b5c6d7e" }),
    client_secret: z
      .string()
      .optional()
      .openapi({ description: "Confidential clients only; shown once at registration." }),
    client_id_issued_at: z.number().int(),
    client_secret_expires_at: z
      .number()
      .int()
      .optional()
      .openapi({ description: "Confidential clients only; 0 means the secret never expires." }),
    registration_access_token: z.string().optional().openapi({ description: "Shown once at registration." }),
    registration_client_uri: z.url(),
    redirect_uris: z.array(z.string()),
    client_name: z.string(),
    token_endpoint_auth_method: z.enum(AUTH_METHODS),
    grant_types: z.array(z.enum(GRANT_TYPES)),
    response_types: z.array(z.literal("code")),
    scope: z.string(),
  })
  .openapi("ClientInfo");
export type ClientInfo = z.infer<typeof ClientInfoSchema>;

export const ClientIdParamSchema = z.object({
  client_id: z
    .string()
    .max(100)
    .openapi({ param: { name: "client_id", in: "path" }, example: "svc_client_0190f0b8e4c87c3a9d1e2f3a4b5c6d7e" }),
});

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** Parsed after client authentication; failures map to OAuth errors through `tokenRequestError`. */
export const TokenRequestSchema = z
  .object({
    grant_type: z.enum(GRANT_TYPES),
    code: z.string().optional(),
    code_verifier: z.string().optional(),
    redirect_uri: z.string().optional(),
    refresh_token: z.string().optional(),
    client_id: z
      .string()
      .optional()
      .openapi({ description: "Required unless the client authenticates with HTTP Basic." }),
    client_secret: z.string().optional().openapi({ description: "`client_secret_post` clients only." }),
    resource: z
      .string()
      .optional()
      .openapi({
        description:
          "RFC 8707: the resource the tokens are for, this API (`{base_url}`) or its MCP server (`{base_url}/v1/mcp`). " +
          "At code exchange it must be the authorization request's resource, or binds a code that named none; at refresh it " +
          "must be the family's. Anything else is `invalid_target`.",
      }),
  })
  .superRefine((p, ctx) => {
    const issue = (message: string) => ctx.addIssue({ code: "custom", message });
    if (p.grant_type === "authorization_code") {
      if (!p.code || !p.code_verifier || !p.redirect_uri) issue("code, code_verifier and redirect_uri are required");
      else if (!VERIFIER.test(p.code_verifier)) issue("code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~");
    } else if (!p.refresh_token) issue("refresh_token is required");
  })
  .openapi("TokenRequest");
export type TokenRequest = z.infer<typeof TokenRequestSchema>;

export const TokenResponseSchema = z
  .object({
    access_token: z.string().openapi({ description: "Opaque bearer token (svc_at_…)" }),
    token_type: z.literal("Bearer"),
    expires_in: z.number().int().openapi({ example: 3600 }),
    refresh_token: z.string().openapi({ description: "Rotating refresh token (svc_rt_…), 30 days" }),
    scope: z.string(),
  })
  .openapi("TokenResponse");

export const TokenParamsSchema = z
  .object({
    token: z
      .string()
      .optional()
      .openapi({ description: "The token; without it introspection answers inactive and revocation does nothing." }),
    token_type_hint: z.string().optional().openapi({ description: "Ignored" }),
    client_id: z.string().optional(),
    client_secret: z.string().optional(),
  })
  .openapi("TokenParams");

export const IntrospectionSchema = z
  .object({
    active: z.boolean(),
    scope: z
      .string()
      .optional()
      .openapi({ description: "Effective scopes: granted ∩ the client's current scopes ∩ the user's role" }),
    client_id: z.string().optional(),
    username: z.string().optional().openapi({ description: "The user's email (sign-in name)" }),
    token_type: z.literal("Bearer").optional(),
    exp: z.number().int().optional(),
    iat: z.number().int().optional(),
    sub: z.string().optional().openapi({ description: "The user id" }),
    aud: z
      .string()
      .optional()
      .openapi({ description: "The resource the token is bound to (RFC 8707), when it is bound to one" }),
  })
  .openapi("Introspection");
export type Introspection = z.infer<typeof IntrospectionSchema>;

export const AuthorizeQuerySchema = z.object({
  client_id: z.string(),
  redirect_uri: z.string(),
  code_challenge: z
    .string()
    .openapi({ description: "base64url(SHA-256(code_verifier)), 43 characters for S256 (32-128 accepted)" }),
  code_challenge_method: z.literal("S256").optional(),
  response_type: z.literal("code").optional(),
  scope: z.string().optional(),
  state: z.string().optional(),
  resource: z.string().optional().openapi({
    description:
      "RFC 8707: bind the tokens to this API (`{base_url}`) or to its MCP server (`{base_url}/v1/mcp`); another value is `invalid_target`",
  }),
});

export const AuthorizationServerMetadataSchema = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    registration_endpoint: z.string(),
    introspection_endpoint: z.string(),
    revocation_endpoint: z.string(),
    scopes_supported: z.array(z.string()),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    introspection_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    authorization_response_iss_parameter_supported: z.boolean(),
    client_id_metadata_document_supported: z.boolean(),
    service_documentation: z.string(),
  })
  .openapi("AuthorizationServerMetadata");

export const ProtectedResourceMetadataSchema = z
  .object({
    resource: z.string(),
    authorization_servers: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
    resource_documentation: z.string(),
  })
  .openapi("ProtectedResourceMetadata");
