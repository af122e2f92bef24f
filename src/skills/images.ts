import { generateImage, type ImageModel } from "ai";
import { logError } from "../platform/log";
import { sniffImageType } from "../platform/media-types";
import type { TurnScope } from "../platform/turn-tools";
import { nameStem, storeProduced } from "./produced";

/** Largest generated image stored. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

/** The image types a model may hand back (GIF is not one), with the extension they are stored under. */
const EXTENSIONS: Partial<Record<string, string>> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" };

function imageType(bytes: Uint8Array): { type: string; ext: string } | null {
  const type = sniffImageType(bytes);
  const ext = type && EXTENSIONS[type];
  return type && ext ? { type, ext } : null;
}

export type GeneratedImage = { artifact_id: string; download_url: string; content_type: string };

/** Asks the image model for one image and stores it as an artifact of the turn. */
export async function generateImageArtifact(
  scope: TurnScope,
  model: ImageModel,
  prompt: string,
  signal: AbortSignal,
): Promise<GeneratedImage> {
  let bytes: Uint8Array;
  try {
    const result = await generateImage({ model, prompt, n: 1, maxRetries: 1, abortSignal: signal });
    bytes = result.image.uint8Array;
  } catch (e) {
    if (signal.aborted) throw new Error("Image generation was cancelled: the turn ran out of time");
    logError("generate_image failed", e);
    throw new Error("The image model did not produce an image");
  }
  const kind = imageType(bytes);
  if (!kind) throw new Error("The image model returned something that is not a PNG, JPEG or WebP image");
  if (bytes.byteLength > MAX_IMAGE_BYTES) throw new Error("The generated image is too large to store");
  const stored = await storeProduced(
    scope,
    {
      name: `${nameStem(prompt, "image")}.${kind.ext}`,
      contentType: kind.type,
      caption: prompt,
      source: "generate_image",
    },
    bytes,
  );
  return { ...stored, content_type: kind.type };
}
