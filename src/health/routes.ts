import { z } from "@hono/zod-openapi";
import { apiRoute, createRouter, jsonResponse } from "../http/route";

export const healthRouter = createRouter();

healthRouter.openapi(
  apiRoute("public", {
    method: "get",
    path: "/v1/health",
    tags: ["Service"],
    summary: "Liveness",
    responses: { 200: jsonResponse(z.object({ ok: z.literal(true) }).openapi("Health"), "The service is up") },
  }),
  (c) => c.json({ ok: true as const }, 200),
);
