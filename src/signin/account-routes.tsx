import { type Context, Hono } from "hono";
import { z } from "zod";

import type { Caller } from "../auth/caller";
import { GRANTABLE_SCOPES, roleCeiling } from "../auth/scopes";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { sessionCaller } from "../http/guards";
import { limitBody } from "../http/route";
import { createToken, tokenCreateEvent } from "../identity/tokens";
import { csrfToken, csrfValid, PAGE_HEADERS } from "../platform/pages";
import { ApiError } from "../platform/problem";
import { AccountPage, TokenCreatedPage, type TokenFormInput } from "./account-pages";
import { ACCOUNT_PAGE } from "./service";

/** The signed-in page (HTML): who you are, a personal access token form, sign-out. */
export const accountPageRouter = new Hono<AppEnv>();

type Ctx = Context<AppEnv>;

/** A repeated or absent form field as a list (`parseBody({ all: true })` gives one value or many). */
const list = (v: unknown) => (v === undefined ? [] : [v].flat());

const TokenFormSchema = z.object({
  csrf_token: z.string().max(256).optional(),
  name: z.string({ error: "Give the token a name." }).trim().min(1, "Give the token a name.").max(100),
  scopes: z.preprocess(
    list,
    z
      .array(z.enum(GRANTABLE_SCOPES, { error: "Choose scopes from the list." }))
      .min(1, "Choose at least one scope.")
      .max(GRANTABLE_SCOPES.length),
  ),
  expires_in_days: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z.coerce
      .number({ error: "The expiry is a number of days." })
      .int("The expiry is a whole number of days.")
      .min(1, "The expiry is at least 1 day.")
      .max(3650, "The expiry is at most 3650 days.")
      .optional(),
  ),
});

const toSignIn = (c: Ctx) => c.redirect(`/v1/signin?return_to=${encodeURIComponent(ACCOUNT_PAGE)}`, 303);

/** What the caller's role may put on a token, in the vocabulary's order (never `svc:computer`). */
const offeredScopes = (caller: Caller) => GRANTABLE_SCOPES.filter((s) => roleCeiling(caller.role).has(s));

function renderAccount(c: Ctx, caller: Caller, status: 200 | 400 | 403, form?: TokenFormInput, error?: string) {
  return c.html(
    <AccountPage caller={caller} scopes={offeredScopes(caller)} csrfToken={csrfToken(c)} form={form} error={error} />,
    status,
    PAGE_HEADERS,
  );
}

accountPageRouter.get(ACCOUNT_PAGE, async (c) => {
  const caller = await sessionCaller(c);
  return caller ? renderAccount(c, caller, 200) : toSignIn(c);
});

accountPageRouter.post(`${ACCOUNT_PAGE}/tokens`, limitBody(), async (c) => {
  // A state change from another origin is refused here, before the form is read.
  const caller = await sessionCaller(c);
  if (!caller) return toSignIn(c);
  const body = await c.req.parseBody({ all: true }).catch(() => ({}) as Record<string, unknown>);
  const input: TokenFormInput = {
    name: typeof body.name === "string" ? body.name.slice(0, 100) : undefined,
    scopes: list(body.scopes).filter((s): s is string => typeof s === "string"),
    expiresInDays: typeof body.expires_in_days === "string" ? body.expires_in_days.slice(0, 10) : undefined,
  };
  if (!csrfValid(c, body.csrf_token))
    return renderAccount(c, caller, 403, input, "Your form expired. Please try again.");
  const form = TokenFormSchema.safeParse(body);
  if (!form.success) return renderAccount(c, caller, 400, input, form.error.issues[0]?.message);

  try {
    const { token, info } = await createToken(
      c.env,
      caller.workspace.id,
      {
        userId: caller.userId,
        name: form.data.name,
        scopes: form.data.scopes,
        expiresInDays: form.data.expires_in_days,
      },
      (t) => callerEvent(c, tokenCreateEvent(t)),
    );
    return c.html(
      <TokenCreatedPage token={token} name={info.name} scopes={info.scopes} expiresAt={info.expires_at} />,
      200,
      PAGE_HEADERS,
    );
  } catch (e) {
    // Scopes beyond the role (the role changed since the page was shown): the form again.
    if (e instanceof ApiError && e.status === 400) return renderAccount(c, caller, 400, input, e.message);
    throw e;
  }
});
