/** Every D1 table, re-exported from its area's tables.ts: what drizzle-kit reads and where code imports tables from. */
export * from "../agents/tables";
export * from "../apps/tables";
export * from "../artifacts/tables";
export * from "../audit/tables";
export * from "../billing/tables";
export * from "../conversations/tables";
export * from "../email/tables";
export * from "../identity/tables";
export * from "../mcp/tables";
export * from "../memory/tables";
export * from "../oauth/tables";
export * from "../profile/tables";
export * from "../teamchat/tables";
export * from "../workspace/tables";
