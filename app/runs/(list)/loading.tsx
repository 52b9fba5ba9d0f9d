export default function Loading() {
  return (
    <div className="space-y-3" aria-busy>
      <div className="h-7 w-24 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
      <div className="h-9 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
      <div className="h-96 animate-pulse rounded-lg bg-zinc-100 dark:bg-zinc-900" />
    </div>
  );
}
