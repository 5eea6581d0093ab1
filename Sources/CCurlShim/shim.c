// Everything lives in the header as static inline functions.
