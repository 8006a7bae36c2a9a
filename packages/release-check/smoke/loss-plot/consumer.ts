import { lossPlotSvg, renderLossPlot, type LossPoint, type LossPlotStyle, lossPlotStyle } from '@soup/loss-plot';

const history: LossPoint[] = [
  { step: 1, loss: 2 },
  { step: 2, eval_loss: 1.5 },
];
const style: LossPlotStyle = lossPlotStyle({ isTTY: true, columns: 100, env: {} });
export const lines: string[] = renderLossPlot({ history, ...style });
export const svg: string = lossPlotSvg({ history, title: 't' });
// @ts-expect-error history is required
lossPlotSvg({});
