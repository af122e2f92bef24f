import { tool } from "ai";
import { eq } from "drizzle-orm";
import { z } from "zod";
import type { AuditEventInput } from "../audit/events";
import { workspaces } from "../db/schema";
import { db } from "../platform/db";
import { mediaTypeOf } from "../platform/media-types";
import { decodeBase64, fileContentFields } from "../platform/tool-files";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { APP_MAX_BYTES, APP_MAX_FILES, PublishError, publishApp } from "./service";
import { appsOrigin, appUrl } from "./store";

export const PublishAppInputSchema = z
  .object({
    title: z.string().trim().min(1).max(120).describe("The app's title; its URL slug is made from it"),
    files: z
      .array(
        z
          .object({
            path: z.string().min(1).max(200).describe("Relative path, e.g. index.html or assets/app.js"),
            ...fileContentFields,
            content_type: z
              .string()
              .max(100)
              .optional()
              .describe("Media type, e.g. text/html; guessed from the extension when absent"),
          })
          .strict(),
      )
      .min(1)
      .max(APP_MAX_FILES),
    visibility: z
      .enum(["public", "private"])
      .optional()
      .describe("public: anyone with the link; private (the default): signed-in members of the workspace only"),
  })
  .strict();
export type PublishAppInput = z.infer<typeof PublishAppInputSchema>;

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const MEDIA_TYPE = /^[a-z]+\/[a-z0-9][a-z0-9.+-]*(?:; ?charset=[A-Za-z0-9_-]+)?$/;

/** A bundle path: relative, `/`-separated segments of letters, digits, `.`, `_`, `-`; no `..`, no hidden files. */
export function checkPath(path: string): string {
  const segments = path.split("/");
  if (path.startsWith("/") || segments.some((s) => !SEGMENT.test(s) || s === "." || s === ".."))
    throw new PublishError(
      `invalid path ${JSON.stringify(path.slice(0, 80))}: use relative paths of letters, digits, '.', '_' and '-' separated by '/'`,
    );
  return path;
}

function contentTypeOf(path: string, given: string | undefined): string {
  if (given) {
    const t = given.trim().toLowerCase();
    if (!MEDIA_TYPE.test(t)) throw new PublishError(`invalid content_type for ${path}`);
    return t;
  }
  return mediaTypeOf(path) ?? "application/octet-stream";
}

const tooLarge = () => new PublishError(`the app exceeds ${APP_MAX_BYTES / (1024 * 1024)} MiB; publish smaller files`);

function bytesOf(content: string, encoding: "utf8" | "base64" | undefined): Uint8Array {
  if (encoding !== "base64") {
    if (content.length > APP_MAX_BYTES) throw tooLarge();
    return new TextEncoder().encode(content);
  }
  return decodeBase64(content, APP_MAX_BYTES, { tooLarge, invalid: (message) => new PublishError(message) });
}

/** The files of a bundle as they will be stored, or a PublishError the model sees. */
export function bundleFiles(input: PublishAppInput) {
  const seen = new Set<string>();
  let total = 0;
  const files = input.files.map((f) => {
    const path = checkPath(f.path);
    if (seen.has(path)) throw new PublishError(`the path ${path} appears twice`);
    seen.add(path);
    const bytes = bytesOf(f.content, f.encoding);
    total += bytes.length;
    if (total > APP_MAX_BYTES) throw tooLarge();
    return { path, contentType: contentTypeOf(path, f.content_type), bytes };
  });
  if (!seen.has("index.html")) throw new PublishError("an app needs an index.html at its root");
  return files;
}

async function workspaceSlug(env: Env, workspaceId: string): Promise<string> {
  const row = await db(env)
    .select({ slug: workspaces.slug })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .get();
  if (!row) throw new Error("workspace not found");
  return row.slug;
}

/** Publishes the turn's static bundle as an app of the workspace, created by the turn's user. */
export async function publishAppTool(scope: TurnScope, input: PublishAppInput) {
  const files = bundleFiles(input);
  const visibility = input.visibility ?? "private";
  const row = await publishApp(
    scope.env,
    {
      workspaceId: scope.workspaceId,
      title: input.title,
      visibility,
      conversationId: scope.conversationId,
      creatorUserId: scope.userId,
      agentId: scope.agent.id,
      files,
    },
    (app): AuditEventInput => ({
      workspaceId: scope.workspaceId,
      kind: "app.publish",
      intent: "publish_app",
      actor: { kind: "user", id: scope.userId },
      agentId: scope.agent.id,
      conversationId: scope.conversationId,
      target: `app:${app.id}`,
      details: { slug: app.slug, visibility: app.visibility, files: app.files, size: app.size },
    }),
  ); // delivered with the turn's own event when it ends
  const url = appUrl(appsOrigin(scope.env, scope.origin), await workspaceSlug(scope.env, scope.workspaceId), row.slug);
  return { app_id: row.id, slug: row.slug, url, visibility: row.visibility };
}

/** The apps area's tool for a turn: `publish_app`. */
export const appTools: ToolProvider = async (scope) => ({
  tools: {
    publish_app: tool({
      description:
        "Publish a static web app (HTML, CSS, JavaScript, images) that stays online at its own URL. " +
        "Needs an index.html; at most 5 MiB and 100 files. Pages run sandboxed: no cookies, no storage of the service's origin. " +
        "Answers the app id and its URL.",
      inputSchema: PublishAppInputSchema,
      // Putting an app on the open web waits for a person's approval.
      needsApproval: (input) => input.visibility === "public",
      execute: (input) => publishAppTool(scope, input),
    }),
  },
});
