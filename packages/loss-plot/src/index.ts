export {
  renderLossPlot,
  lossPlotSvg,
  niceTicks,
  findOutliers,
  type LossPoint,
  type RenderLossPlotOptions,
  type LossPlotSvgOptions,
} from './loss-plot';
export { lossPlotStyle, type LossPlotStyle, type LossPlotStyleOptions } from './loss-plot-style';
export { writeLossPlotSvg, type WriteLossPlotSvgOptions } from './write-loss-plot-svg';
export { lossHistoryOf, type LossHistory } from './loss-history-of';
export { readLossHistory } from './read-loss-history';
export { decodePng, type DecodedPng } from './decode-png';
export { LossPlotError, type LossPlotErrorCode, PngUnsupportedError } from './errors';
