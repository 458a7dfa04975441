"""The word lists the catalogue is generated from: categories, their product types, attributes and options.

Everything is lowercase ASCII (titles are capitalized at render time), so every string fits the env charset.
Option values are unique across the option groups of a category, so ``click[value]`` is unambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CategorySpec:
    """One product category: where it sits in the shop and the words its products are made of."""

    key: str
    path: tuple[str, ...]
    types: tuple[str, ...]
    """Product types (WebShop's ``query``): the noun phrase an instruction asks for."""
    audiences: tuple[str, ...]
    attributes: tuple[str, ...]
    materials: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: tuple[float, float]
    uses: tuple[str, ...]


APPAREL_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large")
SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")
WAIST_SIZES = ("28w x 30l", "30w x 30l", "30w x 32l", "32w x 32l", "34w x 32l", "36w x 34l", "38w x 34l")
BED_SIZES = ("twin", "full", "queen", "king", "california king")
COLORS = (
    "black", "navy", "white", "gray", "olive green", "burgundy", "khaki", "royal blue", "charcoal", "red",
    "beige", "forest green", "pink", "light blue", "mustard yellow", "teal", "lavender", "brown",
)  # fmt: skip
METAL_COLORS = ("silver", "gold", "rose gold", "gunmetal", "matte black", "champagne")
FLAVORS = (
    "vanilla", "chocolate", "salted caramel", "strawberry", "peanut butter", "cinnamon", "original",
    "mocha", "honey", "sea salt", "mixed berry", "dark roast", "green apple",
)  # fmt: skip
SCENTS = ("lavender scent", "citrus", "unscented", "eucalyptus mint", "coconut", "rose", "sandalwood", "fresh linen")
PACKS = ("pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12")
WEIGHTS = ("4 ounce", "8 ounce", "12 ounce", "16 ounce", "1.5 pound", "2 pound", "5 pound")
VOLUMES = ("1 fl oz", "1.7 fl oz", "3.4 fl oz", "8 fl oz", "16 fl oz", "33.8 fl oz")
CAPACITIES = ("32gb", "64gb", "128gb", "256gb", "512gb", "1tb")
LENGTHS = ("3 feet", "6 feet", "10 feet", "15 feet")
DUMBBELL_WEIGHTS = ("5 lb", "10 lb", "15 lb", "20 lb", "25 lb", "30 lb", "40 lb")
RUG_SIZES = ("2x3 ft", "3x5 ft", "4x6 ft", "5x8 ft", "6x9 ft", "8x10 ft")
PANEL_SIZES = ("52 x 63 inch", "52 x 84 inch", "52 x 95 inch", "52 x 108 inch")
PET_SIZES = ("toy breed", "small breed", "medium breed", "large breed", "giant breed")
AGES = ("ages 3-5", "ages 6-8", "ages 9-12", "ages 13 and up")
ADULT = ("men", "women")
EVERYONE = ("men", "women", "unisex", "boys", "girls")

CATEGORIES: tuple[CategorySpec, ...] = (
    CategorySpec(
        "jackets", ("clothing", "outerwear", "jackets"),
        ("hiking jacket", "rain jacket", "puffer jacket", "fleece jacket", "softshell jacket", "bomber jacket"),
        ADULT,
        ("waterproof", "windproof", "breathable", "packable", "hooded", "insulated", "lightweight",
         "zip pockets", "machine washable", "adjustable cuffs"),
        ("nylon", "polyester", "recycled polyester", "fleece", "ripstop nylon"),
        (("size", APPAREL_SIZES), ("color", COLORS)), (24.0, 190.0),
        ("hiking", "travel", "commuting", "camping", "everyday wear"),
    ),
    CategorySpec(
        "shirts", ("clothing", "tops", "shirts"),
        ("t-shirt", "polo shirt", "henley shirt", "flannel shirt", "button down shirt", "tank top"),
        EVERYONE,
        ("moisture wicking", "short sleeve", "long sleeve", "slim fit", "relaxed fit", "crew neck",
         "v-neck", "tagless", "machine washable", "wrinkle resistant"),
        ("cotton", "organic cotton", "cotton blend", "linen", "polyester", "merino wool"),
        (("size", APPAREL_SIZES), ("color", COLORS)), (8.0, 60.0),
        ("gym", "everyday wear", "office", "running", "lounging"),
    ),
    CategorySpec(
        "pants", ("clothing", "bottoms", "pants"),
        ("jeans", "chino pants", "cargo pants", "jogger pants", "hiking pants", "dress pants"),
        ADULT,
        ("stretch", "slim fit", "straight leg", "relaxed fit", "high waisted", "quick dry",
         "water resistant", "deep pockets", "machine washable", "wrinkle resistant"),
        ("denim", "cotton twill", "nylon", "polyester blend", "corduroy"),
        (("size", WAIST_SIZES), ("color", COLORS)), (18.0, 120.0),
        ("work", "hiking", "everyday wear", "travel", "office"),
    ),
    CategorySpec(
        "dresses", ("clothing", "women", "dresses"),
        ("maxi dress", "wrap dress", "sundress", "cocktail dress", "shirt dress", "sweater dress"),
        ("women", "girls"),
        ("sleeveless", "long sleeve", "v-neck", "with pockets", "flowy", "bodycon", "knee length",
         "machine washable", "lined", "smocked waist"),
        ("chiffon", "cotton", "rayon", "satin", "knit jersey"),
        (("size", APPAREL_SIZES), ("color", COLORS)), (19.0, 140.0),
        ("summer", "weddings", "the beach", "parties", "work"),
    ),
    CategorySpec(
        "running_shoes", ("shoes", "athletic", "running shoes"),
        ("running shoes", "trail running shoes", "walking shoes", "training shoes", "slip on sneakers"),
        EVERYONE,
        ("non slip", "breathable mesh", "arch support", "memory foam", "lightweight", "cushioned",
         "wide toe box", "waterproof", "rubber sole", "lace up"),
        ("mesh", "knit", "synthetic leather", "suede"),
        (("size", SHOE_SIZES), ("color", COLORS)), (29.0, 180.0),
        ("running", "walking", "the gym", "trail running", "everyday wear"),
    ),
    CategorySpec(
        "boots", ("shoes", "boots", "boots"),
        ("hiking boots", "chelsea boots", "work boots", "snow boots", "ankle boots", "rain boots"),
        ADULT,
        ("waterproof", "steel toe", "insulated", "slip resistant", "ankle support", "pull on",
         "lace up", "rubber sole", "faux fur lined", "lightweight"),
        ("full grain leather", "suede", "rubber", "nubuck leather", "synthetic"),
        (("size", SHOE_SIZES), ("color", COLORS)), (39.0, 240.0),
        ("hiking", "construction work", "winter", "rainy days", "everyday wear"),
    ),
    CategorySpec(
        "backpacks", ("luggage", "bags", "backpacks"),
        ("laptop backpack", "hiking backpack", "school backpack", "travel backpack", "daypack"),
        EVERYONE,
        ("water resistant", "anti theft", "usb charging port", "padded laptop sleeve", "lightweight",
         "tsa friendly", "multiple compartments", "padded straps", "rain cover", "expandable"),
        ("nylon", "canvas", "polyester", "ripstop nylon", "vegan leather"),
        (("capacity", ("15 liters", "20 liters", "25 liters", "30 liters", "40 liters")), ("color", COLORS)),
        (19.0, 160.0), ("school", "travel", "hiking", "commuting", "business trips"),
    ),
    CategorySpec(
        "watches", ("jewelry", "watches", "wrist watches"),
        ("analog watch", "digital watch", "smart watch", "chronograph watch", "dive watch"),
        ADULT,
        ("water resistant", "stainless steel", "scratch resistant", "luminous hands", "heart rate monitor",
         "sleep tracking", "long battery life", "date display", "interchangeable band", "gps"),
        ("stainless steel", "titanium", "silicone", "leather", "ceramic"),
        (("color", METAL_COLORS), ("band size", ("small wrist", "medium wrist", "large wrist"))),
        (25.0, 450.0), ("everyday wear", "swimming", "fitness", "business", "gifts"),
    ),
    CategorySpec(
        "headphones", ("electronics", "audio", "headphones"),
        ("wireless earbuds", "over ear headphones", "noise cancelling headphones", "sports earbuds", "gaming headset"),
        (),
        ("bluetooth", "noise cancelling", "long battery life", "built-in microphone", "sweat resistant",
         "fast charging", "foldable", "low latency", "touch controls", "hi-res audio"),
        ("plastic", "aluminum", "memory foam", "silicone"),
        (("color", ("black", "white", "navy", "gray", "rose gold", "red")),), (15.0, 350.0),
        ("workouts", "travel", "gaming", "phone calls", "commuting"),
    ),
    CategorySpec(
        "chargers", ("electronics", "accessories", "chargers"),
        ("usb c charger", "wireless charger", "power bank", "car charger", "charging cable"),
        (),
        ("fast charging", "usb c", "foldable plug", "compact", "magnetic", "braided cable",
         "overcharge protection", "dual port", "led indicator", "travel friendly"),
        ("gan", "aluminum", "plastic", "nylon braid"),
        (("length", LENGTHS), ("color", ("black", "white", "gray", "navy", "red"))), (8.0, 90.0),
        ("phones", "laptops", "tablets", "travel", "the car"),
    ),
    CategorySpec(
        "storage", ("electronics", "computers", "storage"),
        ("usb flash drive", "portable ssd", "external hard drive", "micro sd card", "memory card"),
        (),
        ("usb 3.2", "high speed", "shockproof", "password protection", "compact", "water resistant",
         "plug and play", "keychain design", "backward compatible", "durable"),
        ("aluminum", "plastic", "rubber", "zinc alloy"),
        (("capacity", CAPACITIES), ("color", ("black", "silver", "blue", "red"))), (7.0, 260.0),
        ("backups", "cameras", "gaming consoles", "laptops", "travel"),
    ),
    CategorySpec(
        "cookware", ("home and kitchen", "cookware", "pots and pans"),
        ("frying pan", "cookware set", "dutch oven", "saucepan", "wok", "cast iron skillet"),
        (),
        ("non stick", "dishwasher safe", "oven safe", "induction compatible", "pfoa free", "heavy duty",
         "even heating", "stay cool handle", "pre seasoned", "glass lid"),
        ("stainless steel", "cast iron", "hard anodized aluminum", "ceramic", "carbon steel"),
        (("size", ("8 inch", "10 inch", "12 inch", "14 inch")), ("color", ("black", "red", "gray", "teal", "cream"))),
        (18.0, 300.0), ("everyday cooking", "searing", "baking", "stir fry", "camping"),
    ),
    CategorySpec(
        "coffee_makers", ("home and kitchen", "appliances", "coffee makers"),
        ("drip coffee maker", "espresso machine", "french press", "pour over coffee maker", "cold brew maker"),
        (),
        ("programmable", "auto shut off", "bpa free", "dishwasher safe", "thermal carafe", "easy to clean",
         "compact", "reusable filter", "keep warm", "large capacity"),
        ("stainless steel", "borosilicate glass", "plastic", "ceramic"),
        (("capacity", ("4 cups", "8 cups", "10 cups", "12 cups", "14 cups")), ("color", ("black", "silver", "white", "red"))),
        (19.0, 400.0), ("home", "the office", "camping", "small kitchens", "gifts"),
    ),
    CategorySpec(
        "bedding", ("home and kitchen", "bedding", "sheets"),
        ("sheet set", "duvet cover", "comforter", "quilt set", "pillowcase set"),
        (),
        ("deep pocket", "breathable", "hypoallergenic", "wrinkle free", "cooling", "machine washable",
         "fade resistant", "soft", "all season", "oeko-tex certified"),
        ("egyptian cotton", "bamboo", "microfiber", "linen", "percale cotton"),
        (("size", BED_SIZES), ("color", COLORS)), (22.0, 220.0),
        ("hot sleepers", "guest rooms", "kids rooms", "all seasons", "hotels"),
    ),
    CategorySpec(
        "curtains", ("home and kitchen", "window treatments", "curtains"),
        ("blackout curtains", "sheer curtains", "thermal curtains", "linen curtains"),
        (),
        ("blackout", "thermal insulated", "noise reducing", "grommet top", "rod pocket", "machine washable",
         "light filtering", "energy saving", "wrinkle free", "fade resistant"),
        ("polyester", "linen blend", "velvet", "cotton"),
        (("size", PANEL_SIZES), ("color", COLORS)), (15.0, 90.0),
        ("bedrooms", "living rooms", "nurseries", "offices", "patio doors"),
    ),
    CategorySpec(
        "rugs", ("home and kitchen", "decor", "area rugs"),
        ("area rug", "runner rug", "shag rug", "outdoor rug", "washable rug"),
        (),
        ("non slip", "machine washable", "stain resistant", "low pile", "pet friendly", "non shedding",
         "indoor outdoor", "soft", "easy to clean", "fade resistant"),
        ("polypropylene", "wool", "jute", "cotton", "polyester"),
        (("size", RUG_SIZES), ("color", COLORS)), (25.0, 320.0),
        ("living rooms", "hallways", "patios", "kitchens", "bedrooms"),
    ),
    CategorySpec(
        "skincare", ("beauty", "skin care", "face"),
        ("face moisturizer", "vitamin c serum", "sunscreen", "face cleanser", "eye cream", "night cream"),
        ("men", "women", "unisex"),
        ("fragrance free", "paraben free", "cruelty free", "hyaluronic acid", "spf 30", "oil free",
         "for sensitive skin", "non comedogenic", "vegan", "dermatologist tested"),
        ("aloe vera", "shea butter", "jojoba oil", "niacinamide", "retinol"),
        (("size", VOLUMES), ("scent", SCENTS)), (7.0, 85.0),
        ("dry skin", "oily skin", "daily use", "anti aging", "acne prone skin"),
    ),
    CategorySpec(
        "hair_care", ("beauty", "hair care", "shampoo and conditioner"),
        ("shampoo", "conditioner", "hair mask", "dry shampoo", "hair oil"),
        ("men", "women", "unisex"),
        ("sulfate free", "paraben free", "color safe", "cruelty free", "vegan", "for curly hair",
         "volumizing", "anti dandruff", "moisturizing", "natural ingredients"),
        ("argan oil", "tea tree oil", "keratin", "biotin", "coconut oil"),
        (("size", VOLUMES), ("scent", SCENTS)), (6.0, 45.0),
        ("dry hair", "fine hair", "daily use", "damaged hair", "oily scalp"),
    ),
    CategorySpec(
        "deodorant", ("beauty", "personal care", "deodorant"),
        ("deodorant stick", "antiperspirant", "body spray", "natural deodorant"),
        ("men", "women", "unisex"),
        ("aluminum free", "long lasting", "cruelty free", "paraben free", "48 hour protection", "vegan",
         "sensitive skin", "baking soda free", "no white marks", "travel size"),
        ("coconut oil", "shea butter", "charcoal", "magnesium"),
        (("size", ("1.7 ounce", "2.6 ounce", "3 ounce", "3.4 ounce")), ("scent", SCENTS)), (4.0, 30.0),
        ("daily use", "workouts", "hot weather", "travel", "sensitive skin"),
    ),
    CategorySpec(
        "coffee", ("grocery", "beverages", "coffee"),
        ("whole bean coffee", "ground coffee", "instant coffee", "coffee pods", "cold brew coffee"),
        (),
        ("organic", "fair trade", "single origin", "low acid", "kosher", "non gmo", "decaf",
         "small batch roasted", "gluten free", "rainforest alliance"),
        ("arabica", "robusta", "colombian", "ethiopian", "sumatra"),
        (("flavor", FLAVORS), ("size", WEIGHTS)), (6.0, 48.0),
        ("espresso", "drip brewing", "french press", "cold brew", "the office"),
    ),
    CategorySpec(
        "snacks", ("grocery", "snacks", "snack bars"),
        ("protein bars", "granola bars", "trail mix", "beef jerky", "rice crackers", "energy bites"),
        (),
        ("gluten free", "high protein", "low sugar", "keto friendly", "non gmo", "vegan", "kosher",
         "no artificial flavors", "individually wrapped", "plant based"),
        ("almonds", "oats", "whey protein", "peanuts", "dates"),
        (("flavor", FLAVORS), ("pack size", PACKS)), (5.0, 45.0),
        ("lunch boxes", "hiking", "post workout", "the office", "road trips"),
    ),
    CategorySpec(
        "tea", ("grocery", "beverages", "tea"),
        ("green tea", "black tea", "herbal tea", "chai tea", "matcha powder", "oolong tea"),
        (),
        ("organic", "caffeine free", "non gmo", "kosher", "fair trade", "gluten free", "loose leaf",
         "individually wrapped", "sugar free", "compostable bags"),
        ("chamomile", "peppermint", "ginger", "hibiscus", "earl grey"),
        (("flavor", FLAVORS), ("pack size", PACKS)), (4.0, 35.0),
        ("bedtime", "mornings", "digestion", "iced tea", "gifts"),
    ),
    CategorySpec(
        "pet_food", ("pet supplies", "dogs", "food"),
        ("dry dog food", "wet dog food", "dog treats", "puppy food", "dental chews"),
        (),
        ("grain free", "high protein", "no artificial preservatives", "made in usa", "limited ingredient",
         "natural", "chicken first ingredient", "easy to digest", "vet recommended", "omega 3"),
        ("chicken", "salmon", "lamb", "beef", "turkey"),
        (("size", WEIGHTS), ("breed size", PET_SIZES)), (8.0, 90.0),
        ("puppies", "senior dogs", "sensitive stomachs", "training", "active dogs"),
    ),
    CategorySpec(
        "pet_toys", ("pet supplies", "cats", "toys"),
        ("cat toy", "scratching post", "cat tree", "laser toy", "catnip toy", "interactive feeder"),
        (),
        ("durable", "non toxic", "interactive", "washable", "refillable catnip", "stable base",
         "rechargeable", "indoor", "easy to assemble", "quiet"),
        ("sisal rope", "plush", "natural rubber", "cardboard", "wood"),
        (("size", ("small", "medium", "large")), ("color", ("gray", "beige", "pink", "teal", "brown"))),
        (5.0, 120.0), ("indoor cats", "kittens", "multiple cats", "exercise", "boredom"),
    ),
    CategorySpec(
        "toys", ("toys and games", "building", "toys"),
        ("building blocks set", "puzzle", "board game", "remote control car", "plush toy", "science kit"),
        ("boys", "girls", "kids"),
        ("educational", "stem", "non toxic", "rechargeable", "bpa free", "family friendly",
         "travel size", "battery operated", "easy to assemble", "gift box"),
        ("abs plastic", "wood", "cardboard", "plush fabric", "silicone"),
        (("age range", AGES), ("color", ("red", "blue", "green", "yellow", "pink", "purple"))), (9.0, 110.0),
        ("birthdays", "family game night", "road trips", "classrooms", "rainy days"),
    ),
    CategorySpec(
        "yoga", ("sports and outdoors", "fitness", "yoga"),
        ("yoga mat", "yoga block", "resistance bands", "foam roller", "exercise ball"),
        (),
        ("non slip", "extra thick", "eco friendly", "latex free", "lightweight", "carrying strap",
         "sweat resistant", "easy to clean", "high density", "anti burst"),
        ("tpe", "natural rubber", "cork", "eva foam", "pvc"),
        (("thickness", ("1/8 inch", "1/4 inch", "1/3 inch", "1/2 inch")), ("color", COLORS)), (9.0, 90.0),
        ("yoga", "pilates", "home workouts", "stretching", "physical therapy"),
    ),
    CategorySpec(
        "weights", ("sports and outdoors", "fitness", "strength training"),
        ("dumbbell", "kettlebell", "adjustable dumbbell set", "weight plate", "ankle weights"),
        (),
        ("neoprene coated", "anti roll", "cast iron", "chrome plated", "textured grip", "rust resistant",
         "color coded", "floor friendly", "quick adjust", "hex shape"),
        ("cast iron", "steel", "rubber", "neoprene", "vinyl"),
        (("weight", DUMBBELL_WEIGHTS), ("color", ("black", "gray", "red", "blue", "pink"))), (12.0, 350.0),
        ("home gyms", "strength training", "rehab", "cardio", "garage gyms"),
    ),
    CategorySpec(
        "office_chairs", ("office products", "furniture", "chairs"),
        ("office chair", "gaming chair", "ergonomic chair", "drafting chair", "desk stool"),
        (),
        ("lumbar support", "adjustable height", "breathable mesh", "padded armrests", "swivel",
         "reclining", "headrest", "quiet casters", "easy assembly", "high back"),
        ("mesh", "faux leather", "fabric", "velvet"),
        (("color", ("black", "gray", "white", "blue", "pink", "brown")), ("style", ("with armrests", "armless", "with footrest"))),
        (60.0, 450.0), ("home offices", "gaming", "long hours", "small spaces", "conference rooms"),
    ),
    CategorySpec(
        "notebooks", ("office products", "paper", "notebooks"),
        ("spiral notebook", "dotted journal", "composition notebook", "planner", "sketchbook"),
        (),
        ("acid free paper", "hardcover", "lay flat", "numbered pages", "elastic closure", "pocket folder",
         "thick paper", "bleed proof", "perforated pages", "recycled paper"),
        ("vegan leather", "kraft paper", "linen cover", "polypropylene"),
        (("ruling", ("college ruled", "wide ruled", "dot grid", "blank", "graph")), ("pack size", PACKS)),
        (5.0, 40.0), ("school", "bullet journaling", "sketching", "meetings", "planning"),
    ),
    CategorySpec(
        "garden", ("patio lawn and garden", "gardening", "tools"),
        ("garden hose", "pruning shears", "raised garden bed", "plant pot", "watering can", "garden gloves"),
        (),
        ("rust resistant", "heavy duty", "lightweight", "ergonomic handle", "kink free", "drainage holes",
         "uv resistant", "weatherproof", "puncture resistant", "expandable"),
        ("stainless steel", "galvanized steel", "cedar wood", "ceramic", "rubber"),
        (("size", ("small", "medium", "large", "extra large")), ("color", ("green", "black", "terracotta", "gray", "white"))),
        (7.0, 160.0), ("vegetable gardens", "balconies", "lawns", "houseplants", "flower beds"),
    ),
)  # fmt: skip

BRAND_HEADS = (
    "nor", "alta", "vel", "kor", "sun", "tri", "bri", "zen", "mar", "oak", "lum", "pax", "rio", "ter",
    "cal", "dun", "fen", "gal", "hal", "ivo", "jas", "kel", "lor", "mon", "nev", "orl", "pel", "qui",
)  # fmt: skip
BRAND_TAILS = (
    "vik", "vo", "ora", "ten", "stone", "field", "ridge", "craft", "line", "works", "peak", "wave",
    "nest", "leaf", "ford", "gear", "ly", "ix", "ano", "ella", "bay", "port", "mark", "wood",
)  # fmt: skip
FLOURISHES = (
    "premium", "classic", "everyday", "ultra", "pro", "essential", "deluxe", "original", "signature",
    "modern", "vintage", "performance", "comfort", "elite", "basic", "advanced", "heritage", "urban",
)  # fmt: skip
