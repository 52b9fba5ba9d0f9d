export default function Loading() {
  return (
    <div className="mx-auto max-w-3xl space-y-4" aria-busy>
      <div className="h-7 w-40 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
      {Array.from({ length: 4 }, (_, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: fixed skeleton placeholders
        <div key={i} className="h-40 animate-pulse rounded-lg bg-zinc-100 dark:bg-zinc-900" />
      ))}
    </div>
  );
}
