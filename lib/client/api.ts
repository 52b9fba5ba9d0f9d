// The one fetch wrapper of the browser side (Trackio's `callApi()`): JSON in/out, the API's
// `{error, issues}` surfaced as ApiClientError, the bearer token added when the user set one.
export interface ApiIssue {
  path: string;
  message: string;
}

export class ApiClientError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: ApiIssue[],
  ) {
    super(message);
    this.name = "ApiClientError";
  }
}

const TOKEN_KEY = "turnlens.apiToken";

export function setApiToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

export async function callApi<T>(path: string, init: { method?: string; body?: unknown; query?: Record<string, string | number | boolean | undefined | null> } = {}): Promise<T> {
  const url = new URL("/api/v1" + path, typeof window === "undefined" ? "http://127.0.0.1" : window.location.origin);
  for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  const method = init.method ?? "GET";
  // every write is JSON (the server refuses others: a cross-site form cannot send it), `{}` when it has no input
  const body = init.body !== undefined ? init.body : method === "POST" ? {} : undefined;
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  const token = typeof window !== "undefined" ? localStorage.getItem(TOKEN_KEY) : null;
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiClientError(res.status, data?.error ?? `HTTP ${res.status}`, data?.issues ?? []);
  return data as T;
}

/**
 * Uploads a file as the raw body (application/octet-stream, which the upload routes take) with XHR,
 * because fetch cannot report upload progress; `onProgress` gets the fraction sent.
 */
export function uploadApi<T>(path: string, file: Blob, query: Record<string, string | undefined>, onProgress?: (fraction: number) => void): Promise<T> {
  const url = new URL("/api/v1" + path, window.location.origin);
  for (const [k, v] of Object.entries(query)) if (v) url.searchParams.set(k, v);
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("content-type", "application/octet-stream");
    const token = localStorage.getItem(TOKEN_KEY);
    if (token) xhr.setRequestHeader("authorization", `Bearer ${token}`);
    xhr.upload.onprogress = (e) => onProgress?.(e.lengthComputable ? e.loaded / e.total : 0);
    xhr.onerror = () => reject(new ApiClientError(0, "the upload failed: the server could not be reached", []));
    xhr.onload = () => {
      let data: { error?: string; issues?: ApiIssue[] } | null = null;
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data as T);
      else reject(new ApiClientError(xhr.status, data?.error ?? `HTTP ${xhr.status}`, data?.issues ?? []));
    };
    xhr.send(file);
  });
}
