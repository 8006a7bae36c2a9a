import { main } from '@soup/cli';

export async function help(): Promise<number> {
  const code: number = await main(['node', 'soup', '--help']);
  return code;
}
// @ts-expect-error argv is a string array
void main('soup --help');
