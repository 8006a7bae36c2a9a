// Tests' soup.yaml: soup/tiny-gpt on data/train.txt at max_length 16, 12 steps of G = 8, output `out`; `training`
// adds lines under training:, `rest` adds top-level sections (each line ends with a newline).
export function tinyConfigText(o: { model?: string; training?: string; rest?: string } = {}): string {
  return `base: soup/tiny-gpt
${o.model ?? ''}data:
  train: data/train.txt
  max_length: 16
training:
  steps: 12
  batch_size: 8
${o.training ?? ''}output: out
${o.rest ?? ''}`;
}
