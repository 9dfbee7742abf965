"""`sl.applications`: Keras's pretrained-model constructors (VGG16, VGG19), with Keras's layer
names, so Keras's published weight files load into them."""

from sluice.applications import vgg16, vgg19
from sluice.applications.vgg16 import VGG16
from sluice.applications.vgg19 import VGG19

__all__ = ["VGG16", "VGG19", "vgg16", "vgg19"]
