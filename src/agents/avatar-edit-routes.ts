import type { Context } from "hono";
import { callerEvent } from "../http/audit";
import { type AppEnv, requestOrigin } from "../http/context";
import { routesOf } from "../http/endpoint";
import { jsonBody, MiB } from "../http/route";
import { imageModel } from "../llm/model";
import { avatarPrompt, generateAvatarImage } from "./avatar-generation";
import { type AvatarImage, decodeAvatarUpload, storeAvatar } from "./avatars";
import { agentEvent, agentResponse, configured, idErrors, params, pathAgent, TAGS } from "./route-parts";
import { AvatarGenerateRequestSchema, AvatarGenerateResponseSchema, AvatarUploadRequestSchema } from "./schemas";
import { getAgentRecord } from "./service";
import { setAvatarUrl } from "./status";

/** Stores the image and makes it the agent's avatar, with its `agent.avatar` event. */
async function useAvatar(c: Context<AppEnv>, id: string, image: AvatarImage, source: "upload" | "generated") {
  const workspaceId = c.var.caller.workspace.id;
  const { url, hash } = await storeAvatar(c.env, requestOrigin(c), workspaceId, image);
  const details = { source, content_type: image.contentType, size: image.bytes.length, sha256: hash };
  const intent = source === "upload" ? "set_avatar" : "generate_avatar";
  const event = callerEvent(c, agentEvent("agent.avatar", id, details, intent));
  return { agent: await setAvatarUrl(c.env, workspaceId, id, url, event), url };
}

const route = routesOf(TAGS);

route(
  "admin",
  "POST /v1/agents/{id}/avatar",
  "Upload an agent's avatar",
  {
    description:
      "`image_base64` is decoded and checked by content: PNG, JPEG, WebP or GIF, at most 1 MiB decoded. It is stored under its content hash and `avatar_url` becomes its absolute download URL. Bodies over 2 MiB are refused with 413.",
    request: { ...params, body: jsonBody(AvatarUploadRequestSchema) },
    responses: {
      200: agentResponse("The agent with its new avatar_url"),
      400: "Malformed id, or an empty (`empty_image`), oversized (`image_too_large`), undecodable (`invalid_image`) or unsupported (`unsupported_image`) image",
      404: "No such agent in this workspace",
      413: "Body over 2 MiB",
    },
  },
  { maxBodyBytes: 2 * MiB },
).handle(async (c) => {
  const { id } = c.req.valid("param");
  const workspaceId = c.var.caller.workspace.id;
  await getAgentRecord(c.env, workspaceId, id);
  const image = decodeAvatarUpload(c.req.valid("json").image_base64);
  const { agent } = await useAvatar(c, id, image, "upload");
  return c.json(agent, 200);
});

route("admin", "POST /v1/agents/{id}/avatar/generate", "Generate an agent's avatar with the image model", {
  description:
    "The optional `prompt` describes the look; it is wrapped in a fixed illustration style and safety rules and sent to the configured image model (`IMAGE_MODEL`). Synchronous; the platform bears the cost. The image is stored and set as `avatar_url`.",
  request: { ...params, body: { ...jsonBody(AvatarGenerateRequestSchema), required: false } },
  responses: {
    200: [AvatarGenerateResponseSchema, "The new avatar URL"],
    ...idErrors,
    500: "Generation failed (`avatar_generation_failed`) or no image model is configured (`image_model_not_configured`)",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const agent = await pathAgent(c, id);
  const noModel = "Avatar generation is not configured on this service (no image model)";
  const model = configured(imageModel(c.env), "image_model_not_configured", noModel);
  const image = await generateAvatarImage(model, avatarPrompt(agent, c.req.valid("json").prompt));
  const { url } = await useAvatar(c, id, image, "generated");
  return c.json({ avatar_url: url }, 200);
});

/** Setting an agent's avatar: an uploaded image, or one the image model draws. */
export const avatarEditRouter = route.router;
