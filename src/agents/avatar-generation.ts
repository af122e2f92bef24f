import { generateImage, type ImageModel } from "ai";
import { requestCallLimits } from "../llm/model";
import { logError } from "../platform/log";
import { sniffImageType } from "../platform/media-types";
import { ApiError } from "../platform/problem";
import { type AvatarImage, MAX_GENERATED_AVATAR_BYTES } from "./avatars";

/** The fixed style every generated avatar is drawn in; the admin's prompt only fills in the look. */
export const AVATAR_STYLE =
  "A square profile avatar for a workplace AI assistant: a friendly flat vector illustration, " +
  "one centered subject, clean shapes, soft lighting, a plain solid-colour background, readable at 64 pixels.";

/** Rules that hold whatever the prompt says. */
export const AVATAR_SAFETY_RULES =
  "Rules: no text, letters, numbers, logos, trademarks or watermarks; no real or identifiable people, " +
  "celebrities or public figures; nothing violent, sexual, hateful, frightening or political; suitable for any workplace.";

const DEFAULT_LOOK = "an abstract, approachable character that suggests helpfulness";

/** The prompt sent to the image model: the style, the admin's description (or a default look), the rules. */
export function avatarPrompt(agent: { display_name: string }, look?: string): string {
  const description = look?.replace(/\s+/g, " ").trim() || DEFAULT_LOOK;
  return `${AVATAR_STYLE}\nThe assistant is called "${agent.display_name}".\nLook: ${description}\n${AVATAR_SAFETY_RULES}`;
}

export const generationFailed = (detail = "The image model did not produce an avatar") =>
  new ApiError(500, "avatar_generation_failed", detail);

/** Asks the image model for one image and checks that what came back is an image we serve. */
export async function generateAvatarImage(
  model: ImageModel,
  prompt: string,
  signal?: AbortSignal,
): Promise<AvatarImage> {
  let bytes: Uint8Array;
  try {
    const result = await generateImage({ model, prompt, n: 1, ...requestCallLimits(signal) });
    bytes = result.image.uint8Array;
  } catch (e) {
    logError("avatar generation failed", e);
    throw generationFailed();
  }
  const contentType = sniffImageType(bytes);
  if (!contentType || bytes.length === 0)
    throw generationFailed("The image model returned something that is not a PNG, JPEG, WebP or GIF image");
  if (bytes.length > MAX_GENERATED_AVATAR_BYTES) throw generationFailed("The generated image is too large");
  return { bytes, contentType };
}
