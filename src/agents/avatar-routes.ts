import { z } from "@hono/zod-openapi";
import { routesOf } from "../http/endpoint";

import { notFound } from "../platform/problem";
import { asStored } from "../platform/stored-bytes";
import { AVATAR_CACHE_CONTROL, avatarKeyFromUrlParts } from "./avatars";
import { AvatarParamsSchema } from "./schemas";

const route = routesOf(["Agents"]);

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif", "image/svg+xml"] as const;
const binary = z.string().openapi({ format: "binary" });

route("public", "GET /v1/avatars/{workspace_id}/{hash}", "Download an agent avatar", {
  description:
    "Serves avatar bytes without a credential, for `<img>` tags: the URL (workspace id and SHA-256 of the content) is unguessable and lists nothing. Content never changes under a URL, so responses carry a strong `ETag` (the hash) and immutable caching; `If-None-Match` gets a 304. `Cross-Origin-Resource-Policy: cross-origin` lets other origins embed it.",
  params: AvatarParamsSchema,
  responses: {
    200: {
      description: "The image",
      content: Object.fromEntries(IMAGE_TYPES.map((t) => [t, { schema: binary }])),
    },
    304: "Not modified (the If-None-Match tag matched)",
    404: "No such avatar",
  },
}).handle(async (c) => {
  const { workspace_id, hash } = c.req.valid("param");
  const key = avatarKeyFromUrlParts(workspace_id, hash);
  if (!key) throw notFound("No such avatar");
  const etag = `"${hash}"`;
  const headers: Record<string, string> = {
    ETag: etag,
    ...asStored(AVATAR_CACHE_CONTROL),
    "Cross-Origin-Resource-Policy": "cross-origin",
    // Stored SVG monograms are ours, but an image opened directly must never run anything.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
  };
  const inm = c.req.header("If-None-Match");
  if (inm?.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)) {
    if (!(await c.env.FILES.head(key))) throw notFound("No such avatar");
    return c.body(null, 304, headers);
  }
  const object = await c.env.FILES.get(key);
  if (!object) throw notFound("No such avatar");
  headers["Content-Type"] = object.httpMetadata?.contentType ?? "application/octet-stream";
  headers["Content-Length"] = String(object.size);
  return c.body(object.body, 200, headers);
});

export const avatarRouter = route.router;
