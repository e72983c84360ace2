//! ptxas / cuobjdump / PTX report parsing. (filled in by the parser work)
