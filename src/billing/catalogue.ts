import { asc, eq } from "drizzle-orm";
import { creditPacks, plans } from "../db/schema";
import { db } from "../platform/db";
import { prices } from "./prices";
import type { Pack, Plan } from "./schemas";

/** Plans and packs as clients see them; `priced` comes from STRIPE_PRICES, the free plan's credits from FREE_MONTHLY_CREDITS. */

type PlanRow = typeof plans.$inferSelect;
type PackRow = typeof creditPacks.$inferSelect;

function toPlan(env: Env, row: PlanRow, freeCredits: number): Plan {
  return {
    slug: row.slug,
    name: row.name,
    monthly_credits: row.slug === "free" ? freeCredits : row.monthlyCredits,
    // The free plan is never sold, whatever STRIPE_PRICES says.
    priced: row.slug !== "free" && !!prices(env)[row.slug],
    active: row.active,
  };
}

const toPack = (env: Env, row: PackRow): Pack => ({
  slug: row.slug,
  name: row.name,
  credits: row.credits,
  priced: !!prices(env)[row.slug],
});

export async function listPlans(env: Env, freeCredits: number): Promise<Plan[]> {
  const rows = await db(env).select().from(plans).orderBy(asc(plans.position)).all();
  return rows.map((r) => toPlan(env, r, freeCredits));
}

export async function listPacks(env: Env): Promise<Pack[]> {
  const rows = await db(env).select().from(creditPacks).orderBy(asc(creditPacks.position)).all();
  return rows.map((r) => toPack(env, r));
}

export async function findPlan(env: Env, slug: string): Promise<PlanRow | undefined> {
  return db(env).select().from(plans).where(eq(plans.slug, slug)).get();
}

export async function findPack(env: Env, slug: string): Promise<PackRow | undefined> {
  return db(env).select().from(creditPacks).where(eq(creditPacks.slug, slug)).get();
}
