"""The bundled demo: the edge-detection program and an image to run it on
(``hpvm demo``)."""
