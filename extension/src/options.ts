/** The options page: the service URL and token, "remember on this computer", and Connect. */
import { isPat, serviceOrigin } from "./settings";
import { describeState, loadSettings, loadState, onStateChange, saveSettings } from "./storage";

const form = document.querySelector<HTMLFormElement>("#form")!;
const serviceUrl = document.querySelector<HTMLInputElement>("#service_url")!;
const token = document.querySelector<HTMLInputElement>("#token")!;
const remember = document.querySelector<HTMLInputElement>("#remember")!;
const status = document.querySelector<HTMLElement>("#status")!;
const problem = document.querySelector<HTMLElement>("#problem")!;

let savedToken = "";

const settings = await loadSettings();
serviceUrl.value = settings.serviceUrl;
remember.checked = settings.remember;
savedToken = settings.token;
// The saved token is never shown again; leaving the field empty keeps it.
if (savedToken) token.placeholder = "(saved; leave empty to keep it)";
status.textContent = describeState(await loadState());
onStateChange((state) => {
  status.textContent = describeState(state);
});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  problem.textContent = "";
  const origin = serviceOrigin(serviceUrl.value);
  const pat = token.value.trim() || savedToken;
  if (!origin || !isPat(pat)) {
    problem.textContent = !origin
      ? "The service URL must be an http:// or https:// address."
      : "The token must be a personal access token (svc_pat_…).";
    return;
  }
  await saveSettings({ serviceUrl: origin, token: pat, remember: remember.checked });
  savedToken = pat;
  token.value = "";
  token.placeholder = "(saved; leave empty to keep it)";
  serviceUrl.value = origin;
  await chrome.runtime.sendMessage({ type: "connect" });
});
