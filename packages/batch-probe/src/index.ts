export const placeholder = 0;
