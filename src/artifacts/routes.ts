import { z } from "@hono/zod-openapi";
import { auditingRefusal, callerEvent } from "../http/audit";
import { requestOrigin } from "../http/context";
import { routesOf } from "../http/endpoint";
import { ApiError, badRequest, notFound } from "../platform/problem";
import { asStored } from "../platform/stored-bytes";
import { contentDisposition, parseRange } from "./download";
import { formDataBoundary } from "./multipart";
import {
  ArtifactDeletedSchema,
  ArtifactIdParamsSchema,
  ArtifactListSchema,
  ArtifactSchema,
  ArtifactUploadFormSchema,
  ConversationIdParamsSchema,
  toArtifact,
} from "./schemas";
import { deleteArtifact, findVisibleArtifact, listArtifacts, participantConversation } from "./service";
import { artifactKey } from "./store";
import { MAX_UPLOAD_BYTES, UPLOAD_OVERHEAD_BYTES, uploadArtifact } from "./upload";

const route = routesOf(["Artifacts"]);
const binary = z.string().openapi({ format: "binary" });

// The upload form is documented by reference only: a zod schema inside the route would make
// the validator parse (and buffer) the whole form before the handler could stream it.
route.router.openAPIRegistry.register("ArtifactUploadForm", ArtifactUploadFormSchema);
const uploadForm = { $ref: "#/components/schemas/ArtifactUploadForm" };

route(
  { scope: "conversations:write" },
  "POST /v1/api/conversations/{id}/artifacts",
  "Upload a file into a conversation",
  {
    description:
      "`multipart/form-data` with `file` (at most 25 MiB; its part's `Content-Type` is stored, its file name sanitised), optional `caption` (at most 1000 characters) and `sensitive` (`true` or `false`). The caller must take part in the conversation. The file streams to storage as it arrives; past 25 MiB the upload stops with 413 and nothing is kept.",
    request: {
      params: ConversationIdParamsSchema,
      body: { required: true, content: { "multipart/form-data": { schema: uploadForm } } },
    },
    responses: {
      201: [ArtifactSchema, "The stored artifact"],
      400: "Malformed id, or a form that is not a valid upload (no file, an empty file, unknown fields)",
      404: "No such conversation in this workspace, or the caller does not take part in it",
      413: "The file exceeds 25 MiB",
      415: "The body is not multipart/form-data",
    },
  },
  { maxBodyBytes: MAX_UPLOAD_BYTES + UPLOAD_OVERHEAD_BYTES, streamedBody: true },
).handle(async (c) => {
  const { id: conversationId } = c.req.valid("param");
  const caller = c.var.caller;
  const boundary = formDataBoundary(c.req.header("Content-Type"));
  if (!boundary)
    throw new ApiError(415, "unsupported_media_type", "The body must be multipart/form-data with a boundary");
  const conversation = await participantConversation(c.env, caller.workspace.id, conversationId, caller.userId);
  if (!conversation) throw notFound("No such conversation");
  const body = c.req.raw.body;
  if (!body) throw badRequest("invalid_multipart", "The body is empty");
  const row = await uploadArtifact(
    c.env,
    { workspaceId: caller.workspace.id, conversationId, userId: caller.userId, boundary },
    body,
    (r) =>
      callerEvent(c, {
        kind: "artifact.create",
        intent: "upload",
        target: `artifact:${r.id}`,
        conversationId,
        details: { source: r.source, content_type: r.contentType, size: r.size, sensitive: r.sensitive },
      }),
  );
  return c.json(toArtifact(requestOrigin(c), { ...row, conversationTitle: conversation.title }), 201);
});

route({ scope: "conversations:read" }, "GET /v1/api/artifacts", "List the artifacts the caller may see", {
  description:
    "Newest first, at most 500: the artifacts of conversations the caller takes part in, and the detached artifacts (their conversation was deleted) the caller produced. System assets such as avatars are not artifacts.",
  responses: { 200: [ArtifactListSchema, "The caller's artifacts"] },
}).handle(async (c) => {
  const caller = c.var.caller;
  const rows = await listArtifacts(c.env, caller.workspace.id, caller.userId);
  const base = requestOrigin(c);
  return c.json({ artifacts: rows.map((r) => toArtifact(base, r)) }, 200);
});

route("authenticated", "GET /v1/api/artifacts/{id}/download", "Download an artifact's bytes", {
  description:
    "Streams the bytes with the stored `Content-Type`, `Content-Disposition: attachment` (an ASCII `filename` and the UTF-8 `filename*`), `X-Content-Type-Options: nosniff`, `Content-Length` and a strong `ETag` (the SHA-256 of the bytes). A single `Range: bytes=…` gets 206 (`If-Range` honoured), an unsatisfiable one 416; a matching `If-None-Match` gets 304. The bytes go out as stored, whatever `Accept-Encoding` says (`Content-Encoding: identity`, `Cache-Control: no-transform`). Anyone who may not see the artifact gets 404.",
  params: ArtifactIdParamsSchema,
  responses: {
    200: { description: "The bytes", content: { "application/octet-stream": { schema: binary } } },
    206: { description: "The requested byte range", content: { "application/octet-stream": { schema: binary } } },
    304: "Not modified (the If-None-Match tag matched)",
    400: "Malformed artifact id",
    404: "No such artifact, another workspace's, or one the caller may not see",
    416: "The range starts past the end of the file",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const caller = c.var.caller;
  const row = await findVisibleArtifact(c.env, caller.workspace.id, caller.userId, id);
  if (!row) throw notFound("No such artifact");
  const etag = `"${row.sha256}"`;
  const headers: Record<string, string> = {
    "Content-Type": row.contentType,
    "Content-Disposition": contentDisposition(row.name),
    "X-Content-Type-Options": "nosniff",
    // Opened directly instead of downloaded, stored HTML or SVG must still run nothing.
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Accept-Ranges": "bytes",
    ...asStored("private, no-cache"),
    ETag: etag,
  };
  const inm = c.req.header("If-None-Match");
  if (inm?.split(",").some((t) => t.trim() === etag || t.trim() === "*")) return c.body(null, 304, headers);

  const ifRange = c.req.header("If-Range");
  const rangeHeader = ifRange === undefined || ifRange.trim() === etag ? c.req.header("Range") : undefined;
  const range = rangeHeader ? parseRange(rangeHeader, row.size) : null;
  if (range === "unsatisfiable")
    throw new ApiError(416, "range_not_satisfiable", `The file has ${row.size} bytes`, undefined, {
      "Content-Range": `bytes */${row.size}`,
    });
  const key = artifactKey(row.workspaceId, row.id);
  const object = range ? await c.env.FILES.get(key, { range }) : await c.env.FILES.get(key);
  if (!object) throw notFound("No such artifact");
  if (range) {
    headers["Content-Length"] = String(range.length);
    headers["Content-Range"] = `bytes ${range.offset}-${range.offset + range.length - 1}/${row.size}`;
    return c.body(object.body, 206, headers);
  }
  headers["Content-Length"] = String(object.size);
  return c.body(object.body, 200, headers);
});

route({ scope: "conversations:write" }, "DELETE /v1/api/artifacts/{id}", "Delete an artifact and its bytes", {
  description:
    "The caller must take part in the artifact's conversation or, once it is detached, be its producer; otherwise 403. The artifact also leaves the conversation's transcript.",
  params: ArtifactIdParamsSchema,
  responses: {
    200: [ArtifactDeletedSchema, "Deleted"],
    400: "Malformed artifact id",
    403: "The caller lacks the scope, or may not delete this artifact",
    404: "No such artifact in this workspace",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const caller = c.var.caller;
  const deleted = deleteArtifact(c.env, caller.workspace.id, caller.userId, id, (r) =>
    callerEvent(c, {
      kind: "artifact.delete",
      target: `artifact:${r.id}`,
      conversationId: r.conversationId,
      details: { source: r.source, content_type: r.contentType, size: r.size },
    }),
  );
  const row = await auditingRefusal(c, { kind: "artifact.delete", target: `artifact:${id}` }, deleted);
  return c.json({ id: row.id, deleted: true as const }, 200);
});

export const artifactsRouter = route.router;
