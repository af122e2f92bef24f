/**
 * What the user set in the options page, and the connection's state for the popup and badge.
 * The token lives in chrome.storage.session (gone when the browser quits) unless the user
 * ticked "remember on this computer", which keeps it in chrome.storage.local instead.
 */
export type Settings = {
  serviceUrl: string;
  token: string;
  remember: boolean;
  /** The user pressed Connect and has not pressed Disconnect (nor did the server end the session). */
  enabled: boolean;
};

export type Status = "connected" | "connecting" | "disconnected";
/** `reason`: the server's close reason, or why the extension stopped. */
export type ConnectionState = { status: Status; reason?: string };

const local = chrome.storage.local;
const session = chrome.storage.session;

export async function loadSettings(): Promise<Settings> {
  const [kept, temporary] = await Promise.all([
    local.get(["service_url", "token", "remember", "enabled"]),
    session.get("token"),
  ]);
  const remember = kept.remember === true;
  const token = remember ? kept.token : temporary.token;
  return {
    serviceUrl: typeof kept.service_url === "string" ? kept.service_url : "",
    token: typeof token === "string" ? token : "",
    remember,
    enabled: kept.enabled === true,
  };
}

/** Saves what the options page submitted; the token goes to exactly one of the two stores. */
export async function saveSettings(s: Pick<Settings, "serviceUrl" | "token" | "remember">): Promise<void> {
  await local.set({ service_url: s.serviceUrl, remember: s.remember });
  if (s.remember) {
    await local.set({ token: s.token });
    await session.remove("token");
  } else {
    await session.set({ token: s.token });
    await local.remove("token");
  }
}

export const setEnabled = (enabled: boolean) => local.set({ enabled });

export async function loadState(): Promise<ConnectionState> {
  const { state } = await session.get("state");
  return isState(state) ? state : { status: "disconnected" };
}

export const saveState = (state: ConnectionState) => session.set({ state });

/** Calls `listener` with each new connection state (for the extension's pages). */
export function onStateChange(listener: (state: ConnectionState) => void): void {
  chrome.storage.session.onChanged.addListener((changes) => {
    const next = changes.state?.newValue;
    if (isState(next)) listener(next);
  });
}

function isState(value: unknown): value is ConnectionState {
  return typeof value === "object" && value !== null && "status" in value && typeof value.status === "string";
}

/** What the popup shows: the close reason when there is one, else the status word. */
export const describeState = (state: ConnectionState) =>
  state.status === "disconnected" && state.reason ? state.reason : state.status;
