import { z } from "@hono/zod-openapi";
import { routesOf } from "../http/endpoint";
import { jsonResponse } from "../http/route";

const route = routesOf(["Service"]);

route("public", "GET /v1/health", "Liveness", {
  responses: { 200: jsonResponse(z.object({ ok: z.literal(true) }).openapi("Health"), "The service is up") },
}).handle((c) => c.json({ ok: true as const }, 200));

export const healthRouter = route.router;
