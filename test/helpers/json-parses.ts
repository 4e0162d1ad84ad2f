/**
 * How many times JSON.parse is given a long text while `run` runs: text refused for its shape must
 * never reach it. A refusal's message reads its keys' literals (at most 202 characters) with
 * JSON.parse, so only texts over 300 characters count.
 */
export async function longParses(run: () => unknown): Promise<number> {
  const parse = JSON.parse;
  let parsed = 0;
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
    if (args[0].length > 300) parsed++;
    return parse(...args);
  }) as typeof JSON.parse;
  try {
    await run();
  } finally {
    JSON.parse = parse;
  }
  return parsed;
}
