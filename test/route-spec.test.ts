import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { routesOf } from "../src/http/endpoint";
import { apiRoute, jsonBody, jsonResponse } from "../src/http/route";
import { problemResponse } from "../src/platform/problem";

const Params = z.object({ id: z.string() });
const Query = z.object({ limit: z.string().optional() });
const Body = z.object({ name: z.string() });
const Thing = z.object({ id: z.string() });

/** The route declarer's short forms stand for exactly the `RouteConfig` written out in full. */
describe("routesOf's short forms", () => {
  it("`params`, `query` and `body` are the request's fields, in the order stated", () => {
    const route = routesOf(["T"]);
    const short = route("admin", "PUT /v1/things/{id}", "Replace a thing", {
      params: Params,
      query: Query,
      body: Body,
      responses: { 200: [Thing, "The thing"] },
    }).config;
    const full = apiRoute("admin", {
      method: "put",
      path: "/v1/things/{id}",
      tags: ["T"],
      summary: "Replace a thing",
      request: { params: Params, query: Query, body: jsonBody(Body) },
      responses: { 200: jsonResponse(Thing, "The thing") },
    });
    expect(short.request).toEqual(full.request);
    expect(Object.keys(short.request)).toEqual(["params", "query", "body"]);
    expect(short.responses).toEqual(full.responses);
  });

  it("a description alone is a problem from 400 on and a bodiless response below; a full response passes as is", () => {
    const headers = { description: "Raw", content: { "text/plain": { schema: z.string() } } };
    const { config } = routesOf(["T"])("admin", "DELETE /v1/things/{id}", "Delete a thing", {
      request: { params: Params },
      responses: { 204: "Deleted", 206: headers, 404: "No such thing", 503: "Down" },
    });
    expect(config.request).toEqual({ params: Params });
    expect(config.responses[204]).toEqual({ description: "Deleted" });
    expect(config.responses[206]).toBe(headers);
    expect(config.responses[404]).toEqual(problemResponse("No such thing"));
    expect(config.responses[503]).toEqual(problemResponse("Down"));
  });

  it("a route that states no request has none", () => {
    const { config } = routesOf(["T"])("public", "GET /v1/things", "List things", {
      responses: { 200: [Thing, "The things"] },
    });
    expect("request" in config).toBe(false);
  });
});
