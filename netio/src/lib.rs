//! Packet I/O backends behind one burst trait.
