import { type ReferenceConfig, text } from "drizzle-orm/sqlite-core";

export const createdAt = () => text("created_at").notNull();

/** A required text column holding another row's key (`target` is lazy, so tables may refer to each other). */
export const ref = (name: string, target: ReferenceConfig["ref"], actions?: ReferenceConfig["actions"]) =>
  text(name).notNull().references(target, actions);
