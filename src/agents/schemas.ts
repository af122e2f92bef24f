import { z } from "@hono/zod-openapi";
import { idPathParams } from "../http/params";
import { describeRuntimeProfiles, RUNTIME_PROFILE_SLUGS } from "../llm/models";
import { TONES, VERBOSITIES } from "../llm/system-prompt";
import { problemSchema } from "../platform/problem";
import { isToolPattern } from "../runtime/approval-patterns";
import { AGENT_HANDLE_PATTERN, HANDLE_RULE, RESERVED_AGENT_HANDLES } from "./handles";

export { TONES, VERBOSITIES };

export const AgentRowSchema = z
  .object({
    id: z.uuid(),
    slug: z.string(),
    display_name: z.string(),
    aliases: z.array(z.string()),
    cautions: z.array(z.string()),
    languages: z
      .array(z.string())
      .openapi({ description: "BCP-47 tags; the first is the default, the rest fallbacks in order" }),
    approval_required: z.array(z.string()).openapi({
      description: "Tool names and patterns whose calls wait for a person's approval (besides the defaults)",
    }),
    runtime_profile: z.string(),
    delivery_mode: z.string().openapi({ description: "How replies are delivered; `chat` for every agent today" }),
    status: z.enum(["enabled", "disabled"]),
    is_default: z.boolean(),
    instructions_is_default: z.boolean(),
    created_at: z.iso.datetime(),
    avatar_url: z.string().nullable().optional().openapi({ description: "Absolute URL; null means the default icon" }),
    description: z.string().nullable().optional(),
    instructions: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "System prompt; null means the platform baseline only" }),
    model: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "Null means the runtime profile's platform default" }),
    tone: z.enum(TONES).nullable().optional(),
    verbosity: z.enum(VERBOSITIES).nullable().optional(),
  })
  .openapi("AgentRow");
export type AgentRow = z.infer<typeof AgentRowSchema>;

export const AgentListSchema = z.object({ agents: z.array(AgentRowSchema) }).openapi("AgentList");

/** A refused agent save; an `unknown_model` refusal lists the models the provider offers. */
export const AgentRequestProblemSchema = problemSchema()
  .extend({
    available_models: z
      .array(z.string())
      .optional()
      .openapi({ description: "With `unknown_model`: the model ids the configured provider offers" }),
  })
  .openapi("AgentRequestProblem");

export const AgentIdParamSchema = idPathParams("The agent's id");

// Handles are checked by the service (format, reserved words, uniqueness) so that each
// failure gets its own problem code; the schema documents the rule.
const HANDLE_DOC = `${HANDLE_RULE}; not a reserved word (${RESERVED_AGENT_HANDLES.join(", ")}); unique among every slug and alias of the workspace`;
const HandleSchema = z.string().max(200).openapi({
  pattern: AGENT_HANDLE_PATTERN.source,
  minLength: 2,
  maxLength: 32,
  description: HANDLE_DOC,
});

// No control characters: these strings end up inside a system prompt, one per line.
const noControlChars = (s: string) => !/[\u0000-\u001f\u007f]/.test(s);

const CautionsSchema = z
  .array(z.string().trim().min(1).max(200).refine(noControlChars, "must be a single line"))
  .max(20)
  .openapi({ description: "Short phrases to avoid (at most 20, each at most 200 characters)" });

const LanguagesSchema = z
  .array(z.string().max(35))
  .max(10)
  .transform((tags, ctx) => {
    const out: string[] = [];
    tags.forEach((tag, i) => {
      let canonical: string | undefined;
      try {
        canonical = Intl.getCanonicalLocales(tag)[0];
      } catch {
        canonical = undefined;
      }
      if (!canonical)
        ctx.addIssue({ code: "custom", path: [i], message: `"${tag}" is not a valid BCP-47 language tag` });
      else if (out.includes(canonical))
        ctx.addIssue({ code: "custom", path: [i], message: `"${canonical}" is listed twice` });
      else out.push(canonical);
    });
    return out;
  })
  .openapi({
    description:
      "BCP-47 tags (stored canonicalised, e.g. en-us → en-US); the first is the default, the rest fallbacks; at most 10",
  });

const ApprovalRequiredSchema = z
  .array(
    z
      .string()
      .min(1)
      .max(128)
      .refine(isToolPattern, "a tool name of [A-Za-z0-9_-], with `*` only at the end of a `__` segment"),
  )
  .max(50)
  .openapi({
    description:
      "Tool names whose calls wait for a person's approval; `*` at the end of a segment is a wildcard " +
      "(`mcp__*`, `mcp__billing__*`). At most 50; unknown names are kept (their tools may come later). " +
      "Besides these, MCP tools their server marks `destructiveHint` and `publish_app` with public visibility always wait.",
  });

const DisplayNameSchema = z.string().trim().min(1).max(100).refine(noControlChars, "must be a single line");
const DescriptionSchema = z.string().trim().min(1).max(1000);
const InstructionsSchema = z.string().trim().min(1).max(20_000);
const RuntimeProfileSchema = z
  .enum(RUNTIME_PROFILE_SLUGS as [string, ...string[]])
  .openapi({ description: describeRuntimeProfiles() });
const ModelSchema = z
  .string()
  .min(1)
  .max(64)
  .openapi({ description: "A model of the agent's runtime profile (see runtime_profile)" });
const AvatarUrlSchema = z
  .url({ protocol: /^https?$/, hostname: z.regexes.hostname })
  .max(2048)
  .openapi({ description: "Absolute http(s) URL" });
const SlugListSchema = z.array(z.string().min(1).max(100)).max(100);

export const CreateAgentRequestSchema = z
  .object({
    slug: HandleSchema,
    display_name: DisplayNameSchema,
    description: DescriptionSchema.nullish(),
    instructions: InstructionsSchema.nullish(),
    tone: z.enum(TONES).nullish(),
    verbosity: z.enum(VERBOSITIES).nullish(),
    cautions: CautionsSchema.optional(),
    languages: LanguagesSchema.optional(),
    aliases: z.array(HandleSchema).max(10).optional(),
    runtime_profile: RuntimeProfileSchema.optional(),
    model: ModelSchema.nullish(),
    avatar_url: AvatarUrlSchema.nullish(),
    skills: SlugListSchema.optional().openapi({
      description: "Initial enabled skills (installed slugs); empty or absent means all installed",
    }),
    mcp_servers: SlugListSchema.optional().openapi({
      description: "Initial enabled MCP servers (installed slugs); empty or absent means all installed",
    }),
    approval_required: ApprovalRequiredSchema.optional(),
  })
  .strict()
  .openapi("CreateAgentRequest");
export type CreateAgentRequest = z.infer<typeof CreateAgentRequestSchema>;

export const UpdateAgentRequestSchema = z
  .object({
    slug: HandleSchema.optional().openapi({ description: `${HANDLE_DOC}. Renaming keeps the old slug as an alias.` }),
    display_name: DisplayNameSchema.optional(),
    description: DescriptionSchema.nullable().optional(),
    instructions: InstructionsSchema.nullable()
      .optional()
      .openapi({ description: "Writing this (even null) makes instructions_is_default false" }),
    tone: z.enum(TONES).nullable().optional(),
    verbosity: z.enum(VERBOSITIES).nullable().optional(),
    cautions: CautionsSchema.optional(),
    languages: LanguagesSchema.optional(),
    aliases: z.array(HandleSchema).max(10).optional(),
    runtime_profile: RuntimeProfileSchema.optional(),
    model: ModelSchema.nullable().optional(),
    avatar_url: AvatarUrlSchema.nullable().optional(),
    approval_required: ApprovalRequiredSchema.optional(),
  })
  .strict()
  .openapi("UpdateAgentRequest", { description: "Only the fields sent change; null clears a nullable field" });
export type UpdateAgentRequest = z.infer<typeof UpdateAgentRequestSchema>;

export const AgentSkillsSchema = z
  .object({ skills: SlugListSchema.openapi({ description: "Enabled skill slugs; empty means every installed skill" }) })
  .strict()
  .openapi("AgentSkills");
export const AgentMcpServersSchema = z
  .object({
    mcp_servers: SlugListSchema.openapi({
      description: "Enabled MCP-server slugs; empty means every installed server",
    }),
  })
  .strict()
  .openapi("AgentMcpServers");

export const AvatarUploadRequestSchema = z
  .object({
    image_base64: z.string().openapi({
      description:
        "The image, base64-encoded (a `data:image/...;base64,` prefix is accepted). PNG, JPEG, WebP or GIF by content, at most 1 MiB decoded.",
    }),
  })
  .strict()
  .openapi("AvatarUploadRequest");

export const AvatarGenerateRequestSchema = z
  .object({
    prompt: z.string().trim().min(1).max(500).optional().openapi({
      description: "What the avatar should look like; wrapped in a fixed illustration style and safety rules",
    }),
  })
  .strict()
  .openapi("AvatarGenerateRequest");

export const AvatarGenerateResponseSchema = z.object({ avatar_url: z.url() }).openapi("AvatarGenerateResponse");

export const SuggestInstructionsResponseSchema = z
  .object({ draft: z.string().openapi({ description: "A proposed system prompt; not saved" }) })
  .openapi("SuggestedInstructions");

export const AvatarParamsSchema = z.object({
  workspace_id: z.string().openapi({ param: { name: "workspace_id", in: "path" }, description: "The workspace's id" }),
  hash: z.string().openapi({
    param: { name: "hash", in: "path" },
    description: "SHA-256 (hex) of the image bytes",
    pattern: "^[0-9a-f]{64}$",
  }),
});

// ---- catalogues ----

export const SkillEntrySchema = z
  .object({
    slug: z.string(),
    name: z.string(),
    description: z.string(),
    installed: z.boolean(),
    available: z.boolean().openapi({
      description: "Whether this deployment can run the skill; an unavailable skill offers an agent no tool",
    }),
    unavailable_reason: z
      .string()
      .nullable()
      .openapi({ description: "Why the skill is unavailable (the missing configuration); null when available" }),
  })
  .openapi("Skill");
export type SkillEntry = z.infer<typeof SkillEntrySchema>;
export const SkillCatalogueSchema = z.object({ skills: z.array(SkillEntrySchema) }).openapi("SkillCatalogue");

export const McpServerEntrySchema = z
  .object({
    slug: z.string(),
    name: z.string(),
    description: z.string(),
    url: z.url(),
    installed: z.boolean(),
    custom: z.boolean().openapi({ description: "A custom integration of the workspace (`t:<slug>`)" }),
  })
  .openapi("McpServer");
export type McpServerEntry = z.infer<typeof McpServerEntrySchema>;
export const McpServerCatalogueSchema = z
  .object({ mcp_servers: z.array(McpServerEntrySchema) })
  .openapi("McpServerCatalogue");
